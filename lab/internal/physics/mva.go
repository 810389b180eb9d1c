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
	// maxDestageUtil is the largest share of device time destaging may take: above it the cache
	// cannot keep up and fills.
	maxDestageUtil = 0.9
	// maxOpenUtil bounds the background (copy) load so closed classes always make progress; a copy
	// asking for more is slowed by the data mover's own flow control.
	maxOpenUtil      = 0.6
	mvaTolerance     = 1e-7
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
	hostQD  []float64
	open    []openStream
	mode    writeMode
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
	iterations     int
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
	return math.Min(util, maxOpenUtil), cacheMBpms, destagePerMB
}

// solve runs the approximate MVA to its fixed point.
func (p *problem) solve() solution {
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
	wait := make([]float64, n) // residence per ms of service: queueing and background inflation
	resp := make([]float64, n)
	hostPop := make([]float64, len(p.hostQD))
	totalPop := 0.0
	for i := range p.classes {
		cs[i] = p.classCosts(&p.classes[i])
		sol.arrayPop[i] = p.classes[i].pop
		totalPop += p.classes[i].pop
	}
	openUtil, copyMBpms, copyPerMB := p.openLoad()
	through := p.mode == writeThrough || d.cacheMB <= 0
	destageCapMBpms := d.destageMBps / 1000
	// Initial guess: every IO at the devices, none queued behind another.
	q := 0.0
	for i := range qc {
		qc[i] = p.classes[i].pop / servers * 0.5
		q += qc[i]
	}
	closedUtil, destageUtil := 0.0, 0.0
	for it := 1; it <= mvaMaxIterations; it++ {
		sol.iterations = it
		k := math.Max(1, q)
		posR, posW := d.position(false, k), d.position(true, k)
		seqR, seqW := d.seqPosition(false), d.seqPosition(true)
		backU := math.Min(openUtil+destageUtil, 0.98)
		infl := 1 / (1 - backU)
		util := math.Min(1, closedUtil+backU)
		newQ := 0.0
		for h := range hostPop {
			hostPop[h] = 0
		}
		for i := range p.classes {
			c := &p.classes[i]
			k := &cs[i]
			a := math.Max(0, q-qc[i]/math.Max(1, sol.arrayPop[i]))
			wait[i] = (1 + a) * infl
			sRead := c.random*posR + (1-c.random)*seqR + k.xfer
			readRes := sRead * forkJoin(k.m, util) * wait[i]
			sol.readResp[i] = k.delay + readRes
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
			// The array holds what the host lets through: the VM's IOs, fewer if a rate cap
			// holds them back (a capped class keeps cap·R at the array, Little's law).
			e := c.pop
			if !math.IsInf(c.capIOPS, 1) {
				e = math.Min(e, c.capIOPS/1000*resp[i])
			}
			sol.arrayPop[i] = e
			hostPop[c.host] += e
			dem[i] = demand
		}
		// A host sends at most its queue depth of IOs to the LUN; the rest wait in the host.
		for i := range p.classes {
			h := p.classes[i].host
			if hostPop[h] > p.hostQD[h] {
				sol.arrayPop[i] *= p.hostQD[h] / hostPop[h]
			}
		}
		maxChange := 0.0
		closed, writeMBpms, destageWork := 0.0, 0.0, 0.0
		for i := range p.classes {
			c := &p.classes[i]
			x := sol.arrayPop[i] / resp[i]
			if old := sol.x[i]; old > 0 {
				maxChange = math.Max(maxChange, math.Abs(x-old)/old)
			} else if x > 0 {
				maxChange = 1
			}
			sol.x[i] = x
			// Little's law at the devices: the class's IOs there are X times their residence.
			qc[i] = 0.5*qc[i] + 0.5*x*dem[i]*wait[i]/servers
			newQ += qc[i]
			closed += x * dem[i] / servers
			if !through {
				writeMBpms += x * (1 - c.read) * cs[i].writeMB
				destageWork += x * (1 - c.read) * cs[i].destageWork
			}
		}
		// Damped update of the queue estimate keeps the load-dependent service times stable.
		q = newQ
		closedUtil = 0.5*closedUtil + 0.5*closed
		if !through {
			inMBpms := writeMBpms + copyMBpms
			work := destageWork + copyMBpms*copyPerMB // device ms per ms
			perMB := 0.0
			if inMBpms > 0 {
				perMB = work / inMBpms
			}
			capMB := destageCapMBpms
			if perMB > 0 {
				capMB = math.Min(capMB, maxDestageUtil*servers/perMB)
			}
			rate := inMBpms // writeBack: destage what arrives
			if p.mode == writeBackFlush || rate > capMB {
				rate = capMB
			}
			target := rate * perMB / servers
			destageUtil = 0.5*destageUtil + 0.5*target
			sol.writeMBps, sol.destageMBps, sol.destageCapMBps = inMBpms*1000, rate*1000, capMB*1000
		}
		if maxChange < mvaTolerance && it > 3 {
			break
		}
	}
	sol.util = math.Min(1, closedUtil+openUtil+destageUtil)
	return sol
}
