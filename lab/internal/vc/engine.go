package vc

import (
	"errors"
	"fmt"
	"time"
)

// progressEvery bounds the wall time between two task progress updates while copies run.
const progressEvery = 250 * time.Millisecond

// run advances the lab along its clock until Close: it solves each 20 s interval as simulated time
// passes it and moves relocations along.
func (l *Lab) run() {
	defer close(l.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		changed := l.clock.Changed()
		l.advance(l.clock.Now())
		wait, moving := l.nextWait()
		var tick <-chan time.Time
		if moving {
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			timer.Reset(wait)
			tick = timer.C
		}
		select {
		case <-l.stop:
			return
		case <-changed:
		case <-l.wakeup:
		case <-tick:
		}
	}
}

// wake makes the engine re-plan now (a relocation was submitted).
func (l *Lab) wake() {
	select {
	case l.wakeup <- struct{}{}:
	default:
	}
}

// nextWait is the wall time until the next interval end or relocation event, and false when the
// clock is paused.
func (l *Lab) nextWait() (time.Duration, bool) {
	l.engineMu.Lock()
	next := l.lastEnd.Add(IntervalLength)
	l.engineMu.Unlock()
	l.mu.Lock()
	if t, ok := l.relocs.nextEvent(); ok && t.Before(next) {
		next = t
	}
	active := l.relocs.active()
	l.mu.Unlock()
	wd, moving := l.clock.WallDuration(next.Sub(l.clock.Now()))
	if !moving {
		return 0, false
	}
	if active && wd > progressEvery {
		wd = progressEvery
	}
	if wd < time.Millisecond {
		wd = time.Millisecond
	}
	return wd, true
}

// advance brings the lab to simulated time t: relocation events and interval ends in time order,
// so a copy loads exactly the intervals it overlaps.
func (l *Lab) advance(t time.Time) {
	l.engineMu.Lock()
	defer l.engineMu.Unlock()
	for {
		nb := l.lastEnd.Add(IntervalLength)
		cancelled := l.cancelledTasks()
		l.mu.Lock()
		ev, ok := l.relocs.nextEvent()
		if ok && !ev.After(t) && !ev.After(nb) {
			var fx effects
			l.relocs.fire(ev, cancelled, &fx)
			l.mu.Unlock()
			l.carryOut(&fx)
			continue
		}
		if len(cancelled) > 0 || len(l.relocs.queue) > 0 {
			// Queued relocations may start now (a cancelled one may have freed slots).
			var fx effects
			l.relocs.dropCancelled(cancelled, &fx)
			l.relocs.startQueued(minTime(t, nb), cancelled, &fx)
			l.mu.Unlock()
			l.carryOut(&fx)
			if len(fx.started)+len(fx.failed)+len(fx.aborted) > 0 {
				continue
			}
			l.mu.Lock()
		}
		if nb.After(t) {
			var fx effects
			l.relocs.progress(t, &fx)
			l.mu.Unlock()
			l.carryOut(&fx)
			return
		}
		placement := make([]int16, len(l.inv.disks))
		for i, d := range l.inv.disks {
			placement[i] = int16(d.ds.idx)
		}
		l.mu.Unlock()
		iv := l.physics.Step(nb, IntervalLength)
		l.perf.add(iv, placement)
		l.lastEnd = nb
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// cancelledTasks finds relocation tasks a client cancelled (CancelTask ends the task itself).
func (l *Lab) cancelledTasks() map[*labTask]bool {
	l.mu.Lock()
	tasks := l.relocs.tasks()
	l.mu.Unlock()
	var out map[*labTask]bool
	for _, t := range tasks {
		if t.finished() {
			if out == nil {
				out = map[*labTask]bool{}
			}
			out[t] = true
		}
	}
	return out
}

// MaxStep bounds one StepIntervals call.
const MaxStep = 10 * HistoryIntervals

// StepIntervals advances simulated time to the end of the n-th interval from now and solves every
// interval on the way before it returns; it returns the end of the last interval.
func (l *Lab) StepIntervals(n int) (time.Time, error) {
	if n < 1 || n > MaxStep {
		return time.Time{}, fmt.Errorf("intervals: must be between 1 and %d, got %d", MaxStep, n)
	}
	if l.closed.Load() {
		return time.Time{}, errors.New("the lab is closed")
	}
	now := l.clock.Now()
	target := now.Truncate(IntervalLength).Add(time.Duration(n) * IntervalLength)
	if _, err := l.clock.Advance(target.Sub(now)); err != nil {
		return time.Time{}, err
	}
	l.advance(l.clock.Now())
	l.engineMu.Lock()
	defer l.engineMu.Unlock()
	return l.lastEnd, nil
}

// SetSpeed changes the pace of simulated time.
func (l *Lab) SetSpeed(speed float64) error { return l.clock.SetSpeed(speed) }

// LastInterval is the end of the last solved interval.
func (l *Lab) LastInterval() time.Time {
	l.engineMu.Lock()
	defer l.engineMu.Unlock()
	return l.lastEnd
}
