package physics

import (
	"time"
)

// The array's write-back cache, over time. In steady state it acknowledges writes at cache
// latency and destages them at the rate they arrive, which loads the devices in the background.
// It cannot keep up when destaging would need more than maxDestageUtil of the devices' time or more
// than the destage ceiling; the surplus then accumulates as dirty data (carried from one interval to
// the next, bounded by cache_mb) while the cache destages flat out. Once full, writes wait for the
// devices (write-through behaviour) until the load falls enough for the backlog to drain.
//
// Within one interval the datastore may pass through up to two of these regimes (filling then
// full, draining then steady); each is solved and the interval's figures are their time-weighted
// blend, IOPS-weighted for latencies, so Little's law still holds for the interval as a whole.

type segment struct {
	frac float64
	out  qosOutcome
}

// solveRegimes solves the interval given the cache's backlog at its start and updates the backlog.
func (m *Model) solveRegimes(ds *datastore, p *problem, dt time.Duration) ([]segment, bool) {
	if ds.dev.cacheMB <= 0 {
		return []segment{{1, m.qos(ds, p, writeThrough)}}, false
	}
	secs := dt.Seconds()
	capMB := ds.dev.cacheMB
	dirty := ds.dirtyMB
	p.backlogPerMB = ds.dirtyPerMB
	// grow adds to the backlog, keeping track of what destaging it will cost.
	grow := func(mb float64, sol *solution) {
		if mb > 0 && sol.destagePerMB > 0 {
			ds.dirtyPerMB = (ds.dirtyMB*ds.dirtyPerMB + mb*sol.destagePerMB) / (ds.dirtyMB + mb)
		}
		ds.dirtyMB = min(capMB, max(0, ds.dirtyMB+mb))
	}
	if dirty <= 0 {
		steady := m.qos(ds, p, writeBack)
		if steady.sol.writeMBps <= steady.sol.destageCapMBps {
			ds.dirtyMB = 0
			return []segment{{1, steady}}, false
		}
	}
	flush := m.qos(ds, p, writeBackFlush)
	net := flush.sol.writeMBps - flush.sol.destageMBps // MB/s of backlog growth while flushing
	switch {
	case net < 0: // the backlog drains
		drain := dirty / -net
		if drain >= secs {
			grow(net*secs, &flush.sol)
			return []segment{{1, flush}}, false
		}
		ds.dirtyMB = 0
		steady := m.qos(ds, p, writeBack)
		if steady.sol.writeMBps > steady.sol.destageCapMBps {
			// Steady state is not sustainable but flushing is: the cache hovers at the edge and keeps
			// flushing with (almost) no backlog.
			return []segment{{1, flush}}, false
		}
		return []segment{{drain / secs, flush}, {1 - drain/secs, steady}}, false
	case dirty >= capMB: // full, and the load keeps it full
		ds.dirtyMB = capMB
		return []segment{{1, m.qos(ds, p, writeThrough)}}, true
	case net == 0:
		return []segment{{1, flush}}, false
	}
	fill := (capMB - dirty) / net
	if fill >= secs {
		grow(net*secs, &flush.sol)
		return []segment{{1, flush}}, false
	}
	grow(capMB-dirty, &flush.sol)
	full := m.qos(ds, p, writeThrough)
	return []segment{{fill / secs, flush}, {1 - fill/secs, full}}, true
}

// blend combines the regimes of an interval into one result per disk, weighting throughputs by
// time and latencies by the IOs completed in each regime.
func blend(p *problem, segs []segment, res *storeResult) {
	n := len(p.classes)
	res.classes = make([]classResult, n)
	res.hostQD = make([]float64, len(p.hostQD))
	for _, sg := range segs {
		res.util += sg.frac * sg.out.sol.util
		res.threshold = max(res.threshold, sg.out.threshold)
		res.congested = res.congested || sg.out.congested
		for h := range res.hostQD {
			res.hostQD[h] += sg.frac * sg.out.hostQD[h]
		}
		rs := classResults(p, &sg.out.sol)
		for i := range rs {
			c, r := &res.classes[i], rs[i]
			w := sg.frac * r.iops
			c.read, c.host = p.classes[i].read, p.classes[i].host
			c.iops += w
			c.readLatMs += w * r.readLatMs
			c.writeLatMs += w * r.writeLatMs
			c.deviceReadLatMs += w * r.deviceReadLatMs
			c.deviceWriteLatMs += w * r.deviceWriteLatMs
			c.arrayPop += sg.frac * r.arrayPop
		}
	}
	for i := range res.classes {
		c := &res.classes[i]
		if c.iops > 0 {
			c.readLatMs /= c.iops
			c.writeLatMs /= c.iops
			c.deviceReadLatMs /= c.iops
			c.deviceWriteLatMs /= c.iops
		}
	}
	res.deviceLat = deviceLatency(res.classes)
}
