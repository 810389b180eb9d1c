package physics

import (
	"runtime"
	"sync"
	"time"
)

// copyStreamOIO is how many IOs a Storage vMotion data mover keeps in flight, used to weigh its
// stream against the disks' when sequential streams are blended.
const copyStreamOIO = 16

// copyIOSizeKB is the data mover's transfer size.
const copyIOSizeKB = 64

// active is one disk doing IO in this interval.
type active struct {
	d *diskState
	p ioParams
}

// classResult is one disk's outcome on its datastore.
type classResult struct {
	iops             float64 // IOs per second
	read             float64 // fraction of reads
	host             int     // index in storeResult.hosts
	readLatMs        float64 // as the VM sees them (host queue included)
	writeLatMs       float64
	deviceReadLatMs  float64 // array side
	deviceWriteLatMs float64
	arrayPop         float64
}

// storeResult is one datastore's outcome.
type storeResult struct {
	ds        *datastore
	actives   []active
	classes   []classResult
	hosts     []string
	hostQD    []float64 // queue depth per host as reported (SIOC window when throttling)
	util      float64
	deviceLat float64
	threshold float64
	congested bool
	cacheFull bool
	copyMBps  float64
}

// Step solves the sampling interval that ends at end and lasts dt, with the workloads as they are
// at the middle of the interval, and returns per-disk, per-host-and-datastore and per-datastore
// figures. The write cache's backlog is carried to the next Step.
func (m *Model) Step(end time.Time, dt time.Duration) *Interval {
	m.mu.Lock()
	defer m.mu.Unlock()
	if dt <= 0 {
		dt = 20 * time.Second
	}
	if m.start.IsZero() {
		m.start = end.Add(-dt)
	}
	t := end.Add(-dt / 2).Sub(m.start)

	// Which disks do IO, on which datastore.
	perStore := make(map[*datastore][]active, len(m.stores))
	for _, d := range m.disks {
		if d.workload == nil || !d.vm.on || !d.store.accessible {
			continue
		}
		p := workloadAt(d.workload, t, m.seed, d.key)
		if p.oio <= 0 || p.sizeKB <= 0 {
			continue
		}
		perStore[d.store] = append(perStore[d.store], active{d: d, p: p})
	}
	copies := make([]*copyLoad, 0, len(m.copies))
	for _, id := range m.copyIDs() {
		c := m.copies[id]
		if c.src.accessible && c.dst.accessible {
			copies = append(copies, c)
		}
	}

	// Datastores are independent: solve them in parallel, each into its own slot.
	results := make([]storeResult, len(m.stores))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, ds := range m.stores {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, ds *datastore) {
			defer wg.Done()
			defer func() { <-sem }()
			results[i] = m.solveStore(ds, perStore[ds], copies, dt)
		}(i, ds)
	}
	wg.Wait()
	return m.assemble(end, dt, results)
}

// solveStore builds the datastore's queueing problem and solves it for the interval.
func (m *Model) solveStore(ds *datastore, actives []active, copies []*copyLoad, dt time.Duration) storeResult {
	res := storeResult{ds: ds, actives: actives}
	hostIndex := map[string]int{}
	for _, h := range ds.mounted {
		if _, ok := hostIndex[h]; !ok {
			hostIndex[h] = len(res.hosts)
			res.hosts = append(res.hosts, h)
		}
	}
	for _, a := range actives {
		if _, ok := hostIndex[a.d.vm.host]; !ok {
			hostIndex[a.d.vm.host] = len(res.hosts)
			res.hosts = append(res.hosts, a.d.vm.host)
		}
	}
	res.hostQD = make([]float64, len(res.hosts))
	for i := range res.hostQD {
		res.hostQD[i] = m.queueDepth
	}

	prob := problem{dev: &ds.dev, hostQD: append([]float64(nil), res.hostQD...)}
	// Sequential streams blend: the array sees the streams of all disks interleaved, so a
	// stream's next IO finds the devices positioned for it only if no other stream's IO came in
	// between, which happens about as often as the stream's share of the datastore's IOs in
	// flight. Its effective randomness grows with the number of concurrently active streams.
	totalOIO := 0.0
	for _, a := range actives {
		totalOIO += a.p.oio
	}
	for _, c := range copies {
		if c.src == ds || c.dst == ds {
			totalOIO += copyStreamOIO
		}
	}
	for _, a := range actives {
		share := a.p.oio / totalOIO
		rnd := a.p.randomPct / 100
		prob.disks = append(prob.disks, a.d)
		prob.classes = append(prob.classes, class{
			pop: a.p.oio, host: hostIndex[a.d.vm.host], read: a.p.readPct / 100, sizeKB: a.p.sizeKB,
			random: rnd + (1-rnd)*(1-share), capIOPS: a.d.limit,
		})
	}
	for _, c := range copies {
		rnd := 1 - copyStreamOIO/totalOIO
		if c.src == ds {
			prob.open = append(prob.open, openStream{mbps: c.mbps, random: rnd, sizeKB: copyIOSizeKB})
			res.copyMBps += c.mbps
		}
		if c.dst == ds {
			prob.open = append(prob.open, openStream{mbps: c.mbps, write: true, random: rnd, sizeKB: copyIOSizeKB})
			res.copyMBps += c.mbps
		}
	}
	segs, full := m.solveRegimes(ds, &prob, dt)
	blend(&prob, segs, &res)
	res.cacheFull = full
	return res
}

// classResults turns a solution into per-disk figures as the VMs see them: an IO that waited in
// the host's queue adds that wait, (N - n_array)/X by Little's law, to its array response.
func classResults(p *problem, s *solution) []classResult {
	out := make([]classResult, len(p.classes))
	for i, c := range p.classes {
		x := s.x[i]
		if x <= 0 {
			continue
		}
		hostWait := max(0, c.pop-s.arrayPop[i]) / x
		out[i] = classResult{
			iops: x * 1000, read: c.read, host: c.host, readLatMs: hostWait + s.readResp[i], writeLatMs: hostWait + s.writeResp[i],
			deviceReadLatMs: s.readResp[i], deviceWriteLatMs: s.writeResp[i], arrayPop: s.arrayPop[i],
		}
	}
	return out
}

// deviceLatency is the IOPS-weighted array-side latency of a datastore's disks.
func deviceLatency(cs []classResult) float64 {
	sum, iops := 0.0, 0.0
	for _, c := range cs {
		sum += c.iops * (c.read*c.deviceReadLatMs + (1-c.read)*c.deviceWriteLatMs)
		iops += c.iops
	}
	if iops == 0 {
		return 0
	}
	return sum / iops
}
