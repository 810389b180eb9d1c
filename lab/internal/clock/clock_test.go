package clock

import (
	"math"
	"testing"
	"time"
)

// fakeWall is a wall clock the test moves by hand.
type fakeWall struct{ t time.Time }

func (f *fakeWall) now() time.Time      { return f.t }
func (f *fakeWall) add(d time.Duration) { f.t = f.t.Add(d) }
func newFake() *fakeWall                { return &fakeWall{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }
func at(sec float64) time.Duration      { return time.Duration(sec * float64(time.Second)) }
func mustNew(t *testing.T, w *fakeWall, speed float64) *Clock {
	t.Helper()
	c, err := New(time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC), speed, w.now)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNowFollowsSpeed(t *testing.T) {
	start := time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		speed float64
		wall  time.Duration
		want  time.Duration
	}{
		{"real time", 1, at(5), at(5)},
		{"speed 60: a third of a second is one interval", 60, at(1.0 / 3), at(20)},
		{"paused", 0, at(100), 0},
		{"slow motion", 0.5, at(10), at(5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newFake()
			c := mustNew(t, w, tc.speed)
			w.add(tc.wall)
			if got := c.Now().Sub(start); (got - tc.want).Abs() > time.Microsecond {
				t.Fatalf("after %v of wall time at speed %v: simulated %v, want %v", tc.wall, tc.speed, got, tc.want)
			}
		})
	}
}

func TestSetSpeedAppliesFromNowOn(t *testing.T) {
	w := newFake()
	c := mustNew(t, w, 1)
	start := c.Now()
	w.add(at(10)) // 10 s at speed 1
	if err := c.SetSpeed(60); err != nil {
		t.Fatal(err)
	}
	w.add(at(1)) // 60 s at speed 60
	if got, want := c.Now().Sub(start), at(70); got != want {
		t.Fatalf("simulated %v, want %v", got, want)
	}
	if err := c.SetSpeed(0); err != nil {
		t.Fatal(err)
	}
	w.add(at(1000))
	if got, want := c.Now().Sub(start), at(70); got != want {
		t.Fatalf("paused clock moved: %v, want %v", got, want)
	}
}

func TestAdvanceJumpsAndNotifies(t *testing.T) {
	w := newFake()
	c := mustNew(t, w, 0)
	start := c.Now()
	changed := c.Changed()
	now, err := c.Advance(3 * 20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := now.Sub(start); got != time.Minute {
		t.Fatalf("advanced by %v, want 1m", got)
	}
	select {
	case <-changed:
	default:
		t.Fatal("Advance did not close the Changed channel")
	}
	if _, err := c.Advance(-time.Second); err == nil {
		t.Fatal("a negative advance was accepted")
	}
}

func TestRefusesBadSpeed(t *testing.T) {
	w := newFake()
	c := mustNew(t, w, 1)
	for _, s := range []float64{-1, math.NaN(), math.Inf(1), MaxSpeed + 1} {
		if err := c.SetSpeed(s); err == nil {
			t.Errorf("speed %v accepted", s)
		}
		if _, err := New(time.Now(), s, nil); err == nil {
			t.Errorf("New accepted speed %v", s)
		}
	}
	if c.Speed() != 1 {
		t.Fatalf("a refused speed changed the clock: %v", c.Speed())
	}
}

func TestWallDuration(t *testing.T) {
	w := newFake()
	for _, tc := range []struct {
		speed  float64
		sim    time.Duration
		want   time.Duration
		moving bool
	}{
		{1, 20 * time.Second, 20 * time.Second, true},
		{60, 20 * time.Second, time.Second / 3, true},
		{0, 20 * time.Second, 0, false},
		{10, -time.Second, 0, true},
	} {
		c := mustNew(t, w, tc.speed)
		got, moving := c.WallDuration(tc.sim)
		if moving != tc.moving || (got-tc.want).Abs() > time.Microsecond {
			t.Errorf("speed %v, %v simulated: wall %v moving %v, want %v %v", tc.speed, tc.sim, got, moving, tc.want, tc.moving)
		}
	}
}
