package physics

import (
	"math"
	"testing"
	"time"

	"github.com/basil-project/basil/lab/internal/scenario"
)

func f(v float64) *float64 { return &v }

func TestWorkloadAt(t *testing.T) {
	k := DiskKey{"vm", "scsi0:1"}
	base := scenario.Workload{OIO: scenario.OIO{Fixed: 8}, IOSizeKB: 8, ReadPct: 70, RandomPct: 100}
	phased := base
	phased.Phases = []scenario.Phase{
		{Duration: dur(600)},
		{Duration: dur(300), OIO: &scenario.OIO{Fixed: 2}, IOSizeKB: f(64), ReadPct: f(100), RandomPct: f(0)},
	}
	sched := base
	sched.OIO = scenario.OIO{Schedule: []scenario.ScheduleStep{{At: dur(0), Value: 1}, {At: dur(120), Value: 6}}, Repeat: dur(300)}
	onoff := base
	onoff.Burst = &scenario.Burst{Kind: scenario.BurstOnOff, On: dur(60), Off: dur(120)}
	diurnal := base
	diurnal.Burst = &scenario.Burst{Kind: scenario.BurstDiurnal, Period: dur(86400), PeakAt: dur(3600 * 14), MinFactor: 0.25}
	cases := []struct {
		name string
		w    scenario.Workload
		at   time.Duration
		want ioParams
	}{
		{"fixed", base, time.Hour, ioParams{8, 8, 70, 100}},
		{"first phase", phased, 599 * time.Second, ioParams{8, 8, 70, 100}},
		{"second phase", phased, 700 * time.Second, ioParams{2, 64, 100, 0}},
		{"phases repeat", phased, 900*time.Second + 10*time.Second, ioParams{8, 8, 70, 100}},
		{"schedule start", sched, 60 * time.Second, ioParams{1, 8, 70, 100}},
		{"schedule step", sched, 200 * time.Second, ioParams{6, 8, 70, 100}},
		{"schedule repeats", sched, 310 * time.Second, ioParams{1, 8, 70, 100}},
		{"burst on", onoff, 30 * time.Second, ioParams{8, 8, 70, 100}},
		{"burst off", onoff, 100 * time.Second, ioParams{0, 8, 70, 100}},
		{"burst on again", onoff, 190 * time.Second, ioParams{8, 8, 70, 100}},
		{"diurnal peak", diurnal, 14 * time.Hour, ioParams{8, 8, 70, 100}},
		{"diurnal trough", diurnal, 2 * time.Hour, ioParams{2, 8, 70, 100}},
		{"before start", base, -time.Minute, ioParams{8, 8, 70, 100}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := workloadAt(&c.w, c.at, 1, k)
			if math.Abs(got.oio-c.want.oio) > 1e-9 || got.sizeKB != c.want.sizeKB || got.readPct != c.want.readPct || got.randomPct != c.want.randomPct {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// A ranged OIO draws a new value in [min, max] every `every`, repeatably for a seed and
// differently for each disk.
func TestRangedOIO(t *testing.T) {
	w := scenario.Workload{OIO: scenario.OIO{Min: 4, Max: 16, Every: dur(20)}, IOSizeKB: 4, ReadPct: 67, RandomPct: 100}
	a, b := DiskKey{"a", "scsi0:1"}, DiskKey{"b", "scsi0:1"}
	seen := map[float64]bool{}
	sum, n := 0.0, 0
	for i := range 500 {
		at := time.Duration(i)*20*time.Second + 5*time.Second
		v := workloadAt(&w, at, 9, a).oio
		if v < 4 || v > 16 {
			t.Fatalf("draw %g outside [4, 16]", v)
		}
		if v != workloadAt(&w, at+10*time.Second, 9, a).oio {
			t.Fatal("the value must hold for the whole period")
		}
		if i == 7 && v == workloadAt(&w, at, 9, b).oio {
			t.Error("two disks drew the same value")
		}
		seen[v] = true
		sum += v
		n++
	}
	if mean := sum / float64(n); len(seen) < 400 || math.Abs(mean-10) > 0.6 {
		t.Errorf("%d distinct values, mean %.2f; want uniform draws around 10", len(seen), mean)
	}
}

// An on/off workload's IO stops in its off periods, as seen through Step.
func TestBurstThroughStep(t *testing.T) {
	v := vm("a", "ds", oltp)
	v.Disks[0].Workload.Burst = &scenario.Burst{Kind: scenario.BurstOnOff, On: dur(60), Off: dur(60)}
	m := build(t, []scenario.Datastore{store("ds", "fc15k", 6)}, v)
	m.SetStart(t0)
	var pattern []bool
	for i := 1; i <= 6; i++ {
		pattern = append(pattern, iopsOf(m.Step(t0.Add(time20(i)), 20e9), "a") > 0)
	}
	if want := []bool{true, true, true, false, false, false}; !equalBools(pattern, want) {
		t.Errorf("active intervals %v, want %v", pattern, want)
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
