package physics

import "math"

// This file solves one datastore for one interval: a closed multi-class queueing network in which
// every active virtual disk is a class whose customers are its outstanding IOs (an Iometer worker
// with zero think time re-issues an IO as soon as one completes). An IO visits
//   - the host's device queue: at most the host's queue depth of its IOs to the LUN are at the
//     array, the rest wait in the host (a window, like ESXi's DQLEN);
//   - a delay centre: controller, fabric and link transfer time;
//   - the devices of the RAID group (a queueing centre per spindle or flash channel; IOs are
//     striped uniformly, so by symmetry all devices have the same queue and are solved as one
//     representative centre with the class demands divided by the number of devices);
//   - for writes, either the write-back cache (acknowledged at cache latency, destaged later as
//     background load on the devices) or, when the cache is full or absent, the devices themselves.
// The network is solved by approximate mean value analysis (Bard-Schweitzer): an arriving IO finds
// the mean queue of the full population minus its own share, R = D(1 + Q - Q_c/N_c); background
// (open) load inflates closed residence times by 1/(1-U_open), as in mixed-network MVA. Device
// service times depend on the queue (tagged command queueing), so they are re-evaluated from the
// current queue estimate on every iteration; a damped fixed point converges in a few dozen steps.

// writeMode says what the array does with a write.
type writeMode int

const (
	// writeBack: writes are acknowledged from cache and destaged at the rate they arrive.
	writeBack writeMode = iota
	// writeBackFlush: writes are acknowledged from cache while the cache destages as fast as the
	// devices allow (it is filling, or draining a backlog).
	writeBackFlush
	// writeThrough: the cache is full or absent; a write completes when the devices have it.
	writeThrough
)

const (
	// maxDestageUtil is the largest share of device time destaging may take: the array keeps the
	// rest for the hosts' IO, and when destaging would need more the cache fills.
	maxDestageUtil = 0.8
	// maxBackground bounds all background load together so the closed classes always progress.
	maxBackground = 0.95
	// maxOpenUtil bounds the background (copy) load so closed classes always make progress; a copy
	// asking for more is slowed by the data mover's own flow control.
	maxOpenUtil      = 0.6
	mvaTolerance     = 1e-6
	mvaMaxIterations = 2000
)

// class is one virtual disk's workload at the array.
type class struct {
	pop    float64 // outstanding IOs the VM keeps in flight
	host   int     // index of the VM's host in problem.hostQD
	read   float64 // fraction of reads
	sizeKB float64
	random float64 // fraction of IOs that need a positioning at the devices (after blending)
	// capIOPS is the rate the host's scheduler lets the disk reach (its IOPS limit, or its
	// allocation under SIOC), in IOs per second; +Inf when none.
	capIOPS float64
}

// openStream is background IO not driven by a closed loop: a Storage vMotion copy.
type openStream struct {
	mbps   float64
	write  bool
	random float64
	sizeKB float64
}

type problem struct {
	dev     *device
	classes []class
	disks   []*diskState // the disk of each class (its IO allocation)
	hostQD  []float64
	open    []openStream
	mode    writeMode
	// backlogPerMB is the device time (ms) destaging one MB of the cache's backlog takes: what
	// draining costs when no new writes arrive.
	backlogPerMB float64
}

type solution struct {
	x         []float64 // throughput per class, IOs per ms
	readResp  []float64 // array-side response of a read and a write, ms (no host queue)
	writeResp []float64
	arrayPop  []float64 // mean IOs of the class at the array (the rest wait in the host)
	// util is the devices' busy fraction (closed classes, destage and copies).
	util float64
	// writeMBps is the data written into the cache per second (host writes and copy writes);
	// destageMBps is the rate at which the cache drains it to the devices in this mode, and
	// destageCapMBps what it could drain at most.
	writeMBps      float64
	destageMBps    float64
	destageCapMBps float64
	destagePerMB   float64 // device ms per MB destaged
	iterations     int
	// state lets a related problem (same classes, other caps) start from this fixed point.
	state mvaState
}

// mvaState is the iterate of the fixed point: the per-device queue and the utilisations.
type mvaState struct {
	qc                      []float64
	closedUtil, destageUtil float64
}

// costs are the per-class quantities that do not depend on the queue.
type costs struct {
	m           float64 // devices a read touches
	xfer        float64 // transfer time of one piece
	rw          writeOps
	seqOps      float64 // device writes per sequential host write
	delay       float64 // controller + link, both directions
	ackDelay    float64 // write acknowledged by the cache
	destageWork float64 // device ms to destage one host write (sorted destage)
	writeMB     float64
}

func (p *problem) classCosts(c *class) costs {
	d := p.dev
	m := d.pieces(c.sizeKB)
	link := c.sizeKB / 1024 / linkMBps * 1000
	k := costs{
		m: m, xfer: d.transfer(c.sizeKB / m), rw: d.randomWrite(c.sizeKB),
		seqOps: m * d.seqWriteFactor(), delay: d.controllerMs + link,
		writeMB: c.sizeKB / 1024,
	}
	k.ackDelay = k.delay + cacheAckMs
	k.destageWork = c.random*k.rw.ops*(d.position(true, destageSortDepth)+k.xfer) +
		(1-c.random)*k.seqOps*(d.seqPosition(true)+k.xfer)
	return k
}

// openLoad returns the device busy fraction of the copies that do not pass through the cache
// (reads, and writes in write-through mode), the data they write into the cache (MB/ms) and the
// device ms per MB of destaging it.
func (p *problem) openLoad() (util, cacheMBpms, destagePerMB float64) {
	d := p.dev
	for _, o := range p.open {
		m := d.pieces(o.sizeKB)
		xfer := d.transfer(o.sizeKB / m)
		iosPerMs := o.mbps / o.sizeKB * 1024 / 1000
		if !o.write {
			s := o.random*d.position(false, 1) + (1-o.random)*d.seqPosition(false) + xfer
			util += iosPerMs * m * s / d.servers()
			continue
		}
		rw := d.randomWrite(o.sizeKB)
		work := o.random*rw.ops*(d.position(true, destageSortDepth)+xfer) +
			(1-o.random)*m*d.seqWriteFactor()*(d.seqPosition(true)+xfer)
		if p.mode == writeThrough || d.cacheMB <= 0 {
			util += iosPerMs * work / d.servers()
			continue
		}
		mb := iosPerMs * o.sizeKB / 1024
		cacheMBpms += mb
		destagePerMB += work * iosPerMs // summed work, normalised below
	}
	if cacheMBpms > 0 {
		destagePerMB /= cacheMBpms
	}
	return min(util, maxOpenUtil), cacheMBpms, destagePerMB
}

// solve runs the approximate MVA to its fixed point, from warm when given (a solution of the
// same classes) or from a cold guess.
func (p *problem) solve(warm *mvaState) solution {
	d := p.dev
	n := len(p.classes)
	servers := d.servers()
	sol := solution{
		x: make([]float64, n), readResp: make([]float64, n), writeResp: make([]float64, n),
		arrayPop: make([]float64, n),
	}
	cs := make([]costs, n)
	qc := make([]float64, n)   // per-device queue of each class
	dem := make([]float64, n)  // device ms per IO of the class (foreground)
	wait := make([]float64, n) // residence per ms of service: queueing and copy-load inflation
	resp := make([]float64, n)
	byHost := make([][]int, len(p.hostQD))
	for i := range p.classes {
		cs[i] = p.classCosts(&p.classes[i])
		sol.arrayPop[i] = p.classes[i].pop
		byHost[p.classes[i].host] = append(byHost[p.classes[i].host], i)
	}
	copyUtil, copyMBpms, copyPerMB := p.openLoad()
	through := p.mode == writeThrough || d.cacheMB <= 0
	destageCapMBpms := d.destageMBps / 1000
	// Initial guess: half of every disk's IOs at the devices.
	q := 0.0
	closedUtil, destageUtil := 0.0, 0.0
	if warm != nil && len(warm.qc) == n {
		copy(qc, warm.qc)
		closedUtil, destageUtil = warm.closedUtil, warm.destageUtil
	} else {
		for i := range qc {
			qc[i] = p.classes[i].pop / servers * 0.5
		}
	}
	for i := range qc {
		q += qc[i]
	}
	// The fixed point has strong feedback (background load stretches residence times, which
	// lowers throughput, which lowers the load), so updates are relaxed, more strongly whenever
	// an update reverses the previous one.
	qDamp, dDamp := damper{alpha: 0.5}, damper{alpha: 0.5}
	var prevX []float64
	for it := 1; it <= mvaMaxIterations; it++ {
		sol.iterations = it
		k := max(1, q)
		posR, posW := d.position(false, k), d.position(true, k)
		seqR, seqW := d.seqPosition(false), d.seqPosition(true)
		// Copies and destaging compete with the disks' IO first come, first served: in
		// mixed-network MVA, background (open) load stretches closed residence times by
		// 1/(1-U_open).
		backU := min(copyUtil+destageUtil, maxBackground)
		infl := 1 / (1 - backU)
		util := min(1, closedUtil+backU)
		for i := range p.classes {
			c := &p.classes[i]
			k := &cs[i]
			a := max(0, q-qc[i]/max(1, sol.arrayPop[i]))
			wait[i] = (1 + a) * infl
			sRead := c.random*posR + (1-c.random)*seqR + k.xfer
			sol.readResp[i] = k.delay + sRead*forkJoin(k.m, util)*wait[i]
			demand := c.read * k.m * sRead
			if through {
				sWR := posW + k.xfer
				sWS := seqW + k.xfer
				writeRes := (c.random*k.rw.rounds*sWR*forkJoin(k.rw.width, util) +
					(1-c.random)*sWS*forkJoin(k.seqOps, util)) * wait[i]
				sol.writeResp[i] = k.delay + writeRes
				demand += (1 - c.read) * (c.random*k.rw.ops*sWR + (1-c.random)*k.seqOps*sWS)
			} else {
				sol.writeResp[i] = k.ackDelay
			}
			resp[i] = c.read*sol.readResp[i] + (1-c.read)*sol.writeResp[i]
			dem[i] = demand
		}
		p.admit(byHost, resp, sol.x, sol.arrayPop)
		maxChange := 0.0
		newQ, closed, writeMBpms, destageWork, qStep, qResidual := 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
		destageResidual := 0.0
		for i := range p.classes {
			c := &p.classes[i]
			x := sol.x[i]
			// Little's law at the devices: the class's IOs there are X times their residence.
			target := x * dem[i] * wait[i] / servers
			qStep += target - qc[i]
			qResidual += math.Abs(target - qc[i])
			qc[i] += qDamp.alpha * (target - qc[i])
			newQ += qc[i]
			closed += x * dem[i] / servers
			if !through {
				w := x * (1 - c.read)
				writeMBpms += w * cs[i].writeMB
				destageWork += w * cs[i].destageWork
			}
		}
		q = newQ
		qDamp.observe(qStep)
		closedResidual := math.Abs(closed - closedUtil)
		closedUtil += qDamp.alpha * (closed - closedUtil)
		if !through {
			inMBpms := writeMBpms + copyMBpms
			work := destageWork + copyMBpms*copyPerMB // device ms per ms
			perMB := safeDiv(work, inMBpms)
			if inMBpms == 0 {
				perMB = p.backlogPerMB
			}
			// Destaging may take up to maxDestageUtil of the devices' time, and no more than the
			// destage ceiling; beyond that the cache cannot keep up.
			capMB := destageCapMBpms
			if perMB > 0 {
				capMB = min(capMB, maxDestageUtil*servers/perMB)
			}
			rate := inMBpms // writeBack: destage what arrives
			if p.mode == writeBackFlush || rate > capMB {
				rate = capMB
			}
			step := rate*perMB/servers - destageUtil
			dDamp.observe(step)
			destageResidual = math.Abs(step)
			destageUtil += dDamp.alpha * step
			sol.writeMBps, sol.destageMBps, sol.destageCapMBps = inMBpms*1000, rate*1000, capMB*1000
			sol.destagePerMB = perMB
		}
		for i := range p.classes {
			if old := sol.x[i]; i < len(prevX) && prevX[i] > 0 {
				maxChange = max(maxChange, math.Abs(old-prevX[i])/prevX[i])
			} else if old > 0 {
				maxChange = 1
			}
		}
		prevX = append(prevX[:0], sol.x...)
		// Converged when the throughputs stand still and the iterate is a fixed point (small
		// steps alone could come from heavy damping).
		if it > 3 && maxChange < mvaTolerance && qResidual < mvaTolerance*max(1, q) &&
			closedResidual < mvaTolerance && destageResidual < mvaTolerance {
			break
		}
	}
	sol.util = min(1, closedUtil+copyUtil+destageUtil)
	sol.state = mvaState{qc: qc, closedUtil: closedUtil, destageUtil: destageUtil}
	return sol
}

// damper relaxes a fixed-point update: it halves its step whenever the update changes direction
// (the sign of an oscillation) and lets it grow back slowly while the updates agree.
type damper struct{ alpha, last float64 }

func (d *damper) observe(step float64) {
	switch {
	case step*d.last < 0:
		d.alpha = max(d.alpha/2, 1.0/1024)
	case step*d.last > 0:
		d.alpha = min(d.alpha*1.2, 0.5)
	}
	d.last = step
}

// admit lets each host send its disks' IOs to the array: a disk with a rate cap (limit, SIOC
// allocation) gets at most cap IOPS, and a host keeps at most its queue depth of IOs at the array,
// the rest waiting in its queue. The host queue is first in, first out, so every IO of a host waits
// there the same time W: a disk's throughput is min(cap, N/(W+R)) and W is the smallest wait that
// keeps Σ X·R within the queue depth. That sum falls with W and is convex, so Newton's method
// started left of the root climbs to it without overshooting.
func (p *problem) admit(byHost [][]int, resp, x, arrayPop []float64) {
	for h, idx := range byHost {
		qd := p.hostQD[h]
		w := 0.0
		for range 100 {
			sum, slope := 0.0, 0.0
			for _, i := range idx {
				c := &p.classes[i]
				free := c.pop / (w + resp[i])
				if cap := c.capIOPS / 1000; cap < free {
					sum += cap * resp[i]
					continue
				}
				sum += free * resp[i]
				slope += free * resp[i] / (w + resp[i])
			}
			excess := sum - qd
			if excess <= 1e-9*qd || slope == 0 {
				break
			}
			w += excess / slope
		}
		for _, i := range idx {
			c := &p.classes[i]
			x[i] = min(c.capIOPS/1000, c.pop/(w+resp[i]))
			arrayPop[i] = x[i] * resp[i]
		}
	}
}
