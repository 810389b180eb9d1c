package physics

import (
	"math"
	"time"

	"github.com/basil-project/basil/lab/internal/scenario"
)

// ioParams is what a disk's IO generator does at one moment: how many IOs it keeps in flight and
// what they look like.
type ioParams struct {
	oio       float64
	sizeKB    float64
	readPct   float64
	randomPct float64
}

// workloadAt evaluates a workload at t since the scenario's start: the phase in effect (phases
// repeat in turn), the outstanding IOs of that moment (fixed, a ranged draw that changes every
// `every`, or the schedule), modulated by the burst (on/off or diurnal).
func workloadAt(w *scenario.Workload, t time.Duration, seed int64, key DiskKey) ioParams {
	if t < 0 {
		t = 0
	}
	p := ioParams{sizeKB: w.IOSizeKB, readPct: w.ReadPct, randomPct: w.RandomPct}
	oio := &w.OIO
	phaseIndex := -1
	if len(w.Phases) > 0 {
		var cycle time.Duration
		for _, ph := range w.Phases {
			cycle += ph.Duration.Duration
		}
		if cycle > 0 {
			at := t % cycle
			for i := range w.Phases {
				ph := &w.Phases[i]
				if at < ph.Duration.Duration {
					phaseIndex = i
					if ph.OIO != nil {
						oio = ph.OIO
					}
					if ph.IOSizeKB != nil && *ph.IOSizeKB > 0 {
						p.sizeKB = *ph.IOSizeKB
					}
					if ph.ReadPct != nil {
						p.readPct = *ph.ReadPct
					}
					if ph.RandomPct != nil {
						p.randomPct = *ph.RandomPct
					}
					break
				}
				at -= ph.Duration.Duration
			}
		}
	}
	p.oio = oioAt(oio, t, seed, key, phaseIndex) * burstFactor(w.Burst, t)
	return p
}

// oioAt returns the outstanding IOs an OIO specification asks for at t.
func oioAt(o *scenario.OIO, t time.Duration, seed int64, key DiskKey, phase int) float64 {
	switch o.Kind() {
	case "range":
		every := o.Every.Duration
		if every <= 0 {
			every = 20 * time.Second
		}
		epoch := uint64(t / every)
		u := uniform(mix(uint64(seed), hashString(key.VM), hashString(key.Unit), uint64(int64(phase)), epoch, saltRange))
		return o.Min + u*(o.Max-o.Min)
	case "schedule":
		if o.Repeat.Duration > 0 {
			t %= o.Repeat.Duration
		}
		v := 0.0
		for _, st := range o.Schedule {
			if st.At.Duration > t {
				break
			}
			v = st.Value
		}
		return v
	default:
		return o.Fixed
	}
}

// burstFactor is the fraction of its outstanding IOs a bursty workload keeps in flight at t.
func burstFactor(b *scenario.Burst, t time.Duration) float64 {
	if b == nil {
		return 1
	}
	switch b.Kind {
	case scenario.BurstOnOff:
		cycle := b.On.Duration + b.Off.Duration
		if cycle <= 0 || t%cycle < b.On.Duration {
			return 1
		}
		return 0
	case scenario.BurstDiurnal:
		period := b.Period.Duration
		if period <= 0 {
			period = 24 * time.Hour
		}
		phase := 2 * math.Pi * float64((t-b.PeakAt.Duration)%period) / float64(period)
		return b.MinFactor + (1-b.MinFactor)*(1+math.Cos(phase))/2
	}
	return 1
}
