package physics

import (
	"math"
)

// Storage I/O Control as the lab models it.
//
// Always (SIOC or not), the host's scheduler holds each disk to its IOPS limit: a limited disk
// keeps at most limit × R of its IOs at the array, the rest wait in the host.
//
// With SIOC enabled, the datastore's array-side latency (IOPS-weighted over its disks, host
// queueing excluded) is compared with the congestion threshold: the manual one, or in automatic
// mode the latency at which the datastore delivers peak_pct per cent of its peak throughput for
// the current mix of IOs. Below the threshold SIOC does nothing. Above it SIOC throttles the
// hosts' queues so the latency settles at the threshold, and the IOs the datastore then completes
// are divided among the disks of all hosts mClock-style: every disk gets its reservation first,
// the rest goes in proportion to shares, and no disk gets more than its limit. Formally each disk
// is allowed a(λ) = clamp(λ·shares, min(reservation, limit), limit) IOPS and λ is the largest value
// for which the datastore's latency does not exceed the threshold (found by bisection; the
// allocation grows with λ, so latency does too). A disk that cannot use its allocation (too few
// outstanding IOs) uses what it can and the rest goes to the others, as mClock's work-conserving
// scheduler does. If even the reservations alone push latency past the threshold, reservations
// are scaled down in proportion (and unreserved disks keep a trickle of minIOPS).
// SIOC never throttles a host's device queue below minHostWindow slots (ESXi keeps the queue
// depth it sets at 4 or more), so when the threshold is below the latency the datastore shows
// with every host at that minimum window (a threshold under the devices' unloaded service time,
// say), latency settles at that floor instead and the floor's throughput is divided as above:
// in total the hosts keep their minimum windows at the array, divided among all disks by shares
// (a simplification: real SIOC keeps each host at 4 or more, which favours lightly shared hosts).
// Each host's reported queue depth (datastoreMaxQueueDepth) is then its window: the IOs its disks
// keep at the array.

const (
	siocBisections = 24
	// lambdaDecades is how far below its upper bound the share multiplier λ is searched.
	lambdaDecades = 9
	// minIOPS keeps a starved disk alive, so its latency stays finite.
	minIOPS = 1.0
	// minHostWindow is the fewest IOs SIOC lets a host keep at a datastore.
	minHostWindow = 4.0
)

// qosOutcome is one solve of a datastore in one write mode, with SIOC applied.
type qosOutcome struct {
	sol       solution
	congested bool
	threshold float64
	hostQD    []float64
}

// qos solves the datastore in the given write mode and, when SIOC is on and the datastore
// congested, enforces reservations, shares and limits.
func (m *Model) qos(ds *datastore, p *problem, mode writeMode) qosOutcome {
	p.mode = mode
	base := append([]float64(nil), capsOf(p)...)
	defer setCaps(p, base)
	out := qosOutcome{sol: p.solve(nil), hostQD: append([]float64(nil), p.hostQD...)}
	if !ds.sioc.enabled || len(p.classes) == 0 {
		return out
	}
	out.threshold = ds.sioc.thresholdMs
	if ds.sioc.automatic {
		out.threshold = automaticThreshold(p, ds.sioc.peakPct)
	}
	if arrayLatency(p, &out.sol) <= out.threshold {
		return out
	}
	out.congested = true
	target := max(out.threshold, minimumWindowLatency(p))
	disks := p.disks
	alloc := func(lambda, resScale float64) {
		for i := range p.classes {
			d := disks[i]
			lim := d.limit
			res := min(d.reservation*resScale, lim)
			a := lambda * d.shares
			a = max(a, max(res, minIOPS))
			p.classes[i].capIOPS = min(a, lim)
		}
	}
	try := func(lambda, resScale float64) (solution, bool) {
		alloc(lambda, resScale)
		s := p.solve(&out.sol.state)
		return s, arrayLatency(p, &s) <= target
	}
	// Reservations alone must fit under the threshold; if not, scale them down.
	if s, ok := try(0, 1); !ok {
		lo, hi := 0.0, 1.0
		best, _ := try(0, 0)
		for range siocBisections {
			mid := (lo + hi) / 2
			if s, ok := try(0, mid); ok {
				lo, best = mid, s
			} else {
				hi = mid
			}
		}
		out.sol = best
	} else {
		// Upper bound for λ: enough that no disk's allocation binds before its own IOs do.
		hi := 0.0
		for i := range p.classes {
			k := p.classCosts(&p.classes[i])
			hi = max(hi, p.classes[i].pop/k.delay*1000/disks[i].shares)
		}
		// λ spans many orders of magnitude (shares go from 1 to a million), so bisect its
		// logarithm; at the bottom of the range only reservations count, which fit (checked above).
		logLo, logHi, best := math.Log(hi)-lambdaDecades*math.Ln10, math.Log(hi), s
		for range siocBisections {
			mid := (logLo + logHi) / 2
			if s, ok := try(math.Exp(mid), 1); ok {
				logLo, best = mid, s
			} else {
				logHi = mid
			}
		}
		out.sol = best
	}
	// The hosts' windows: what their disks keep at the array.
	for h := range out.hostQD {
		out.hostQD[h] = 0
	}
	for i := range p.classes {
		out.hostQD[p.classes[i].host] += out.sol.arrayPop[i]
	}
	for h := range out.hostQD {
		out.hostQD[h] = min(p.hostQD[h], max(1, math.Ceil(out.hostQD[h]-1e-9)))
	}
	return out
}

// minimumWindowLatency is the array latency with every host held to SIOC's minimum window (or
// its own queue depth, if smaller): the lowest latency SIOC can throttle the datastore to.
func minimumWindowLatency(p *problem) float64 {
	probe := *p
	probe.hostQD = make([]float64, len(p.hostQD))
	for h := range probe.hostQD {
		probe.hostQD[h] = min(p.hostQD[h], minHostWindow)
	}
	s := probe.solve(nil)
	return arrayLatency(&probe, &s)
}

func capsOf(p *problem) []float64 {
	caps := make([]float64, len(p.classes))
	for i := range p.classes {
		caps[i] = p.classes[i].capIOPS
	}
	return caps
}

func setCaps(p *problem, caps []float64) {
	for i := range p.classes {
		p.classes[i].capIOPS = caps[i]
	}
}

// arrayLatency is the IOPS-weighted array-side latency of a solution.
func arrayLatency(p *problem, s *solution) float64 {
	sum, x := 0.0, 0.0
	for i, c := range p.classes {
		sum += s.x[i] * (c.read*s.readResp[i] + (1-c.read)*s.writeResp[i])
		x += s.x[i]
	}
	return safeDiv(sum, x)
}

// automaticThreshold finds the array latency at which the datastore, with its current mix of
// IOs, delivers pct per cent of its peak throughput: the mix is scaled up (with no host queue
// limits, as SIOC's injector probes the device) until throughput saturates, then bisected down to
// pct per cent of that. vSphere keeps the result between 5 and 100 ms.
func automaticThreshold(p *problem, pct float64) float64 {
	probe := *p
	probe.classes = append([]class(nil), p.classes...)
	probe.hostQD = make([]float64, len(p.hostQD))
	for h := range probe.hostQD {
		probe.hostQD[h] = math.Inf(1)
	}
	total := 0.0
	for _, c := range p.classes {
		total += c.pop
	}
	at := func(window float64) (float64, float64) {
		for i := range probe.classes {
			probe.classes[i].pop = p.classes[i].pop / total * window
			probe.classes[i].capIOPS = math.Inf(1)
		}
		s := probe.solve(nil)
		x := 0.0
		for _, v := range s.x {
			x += v
		}
		return x, arrayLatency(&probe, &s)
	}
	// Beyond tcqMaxDepth IOs per device nothing is gained; twice that is surely the plateau.
	peakWindow := 2 * tcqMaxDepth * p.dev.servers()
	peak, _ := at(peakWindow)
	lo, hi := 0.0, peakWindow
	for range siocBisections {
		mid := (lo + hi) / 2
		if x, _ := at(mid); x < pct/100*peak {
			lo = mid
		} else {
			hi = mid
		}
	}
	_, lat := at(hi)
	return min(100, max(5, lat))
}
