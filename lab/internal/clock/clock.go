// Package clock keeps the lab's simulated time. It runs at the wall clock's pace times a speed
// factor (1 = real time, 60 = a 20 s sampling interval passes in a third of a second, 0 = paused)
// and can be jumped forward, so tests can step through intervals without waiting.
package clock

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// MaxSpeed bounds the speed factor: beyond it the lab cannot solve its intervals as fast as they
// would pass.
const MaxSpeed = 100000

// Clock is simulated time. It is safe for concurrent use.
type Clock struct {
	wall func() time.Time

	mu       sync.Mutex
	baseWall time.Time // wall time of the last rebase
	baseSim  time.Time // simulated time at baseWall
	speed    float64
	changed  chan struct{}
}

// New returns a clock that reads start now and runs at speed; wall is the wall clock (time.Now
// when nil).
func New(start time.Time, speed float64, wall func() time.Time) (*Clock, error) {
	if err := checkSpeed(speed); err != nil {
		return nil, err
	}
	if wall == nil {
		wall = time.Now
	}
	return &Clock{wall: wall, baseWall: wall(), baseSim: start, speed: speed, changed: make(chan struct{})}, nil
}

func checkSpeed(speed float64) error {
	if math.IsNaN(speed) || math.IsInf(speed, 0) || speed < 0 || speed > MaxSpeed {
		return fmt.Errorf("speed must be between 0 (paused) and %d, got %v", MaxSpeed, speed)
	}
	return nil
}

// now must be called with mu held.
func (c *Clock) now() time.Time {
	elapsed := c.wall().Sub(c.baseWall)
	return c.baseSim.Add(time.Duration(float64(elapsed) * c.speed))
}

// rebase makes the current instant the new origin, so a change of speed applies from now on.
func (c *Clock) rebase() {
	c.baseSim = c.now()
	c.baseWall = c.wall()
}

// notify wakes whoever waits on Changed; called with mu held.
func (c *Clock) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Now returns the simulated time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now()
}

// Speed returns the current speed factor.
func (c *Clock) Speed() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.speed
}

// SetSpeed changes the pace of simulated time from now on; 0 pauses it.
func (c *Clock) SetSpeed(speed float64) error {
	if err := checkSpeed(speed); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rebase()
	c.speed = speed
	c.notify()
	return nil
}

// Advance jumps simulated time forward by d (which must not be negative) and returns the new time.
func (c *Clock) Advance(d time.Duration) (time.Time, error) {
	if d < 0 {
		return time.Time{}, fmt.Errorf("time only moves forward, cannot advance by %v", d)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rebase()
	c.baseSim = c.baseSim.Add(d)
	c.notify()
	return c.baseSim, nil
}

// WallDuration returns how long the wall clock takes to let d of simulated time pass at the
// current speed, and false when the clock is paused (it never passes).
func (c *Clock) WallDuration(d time.Duration) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.speed == 0 {
		return 0, false
	}
	if d <= 0 {
		return 0, true
	}
	return time.Duration(math.Ceil(float64(d) / c.speed)), true
}

// Changed returns a channel closed at the next change of speed or jump of time, so a waiter can
// re-plan its sleep.
func (c *Clock) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}
