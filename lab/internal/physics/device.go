package physics

import (
	"fmt"
	"math"

	"github.com/basil-project/basil/lab/internal/scenario"
)

// device is the storage behind one datastore with its service parameters resolved: a RAID group
// of spindles or flash devices behind an array controller with a write-back cache.
type device struct {
	kind    string
	disks   int
	raid    string
	parity  int  // parity devices per stripe: 1 for RAID 5, 2 for RAID 6
	mirror  bool // RAID 1 and 10 write every block twice
	cacheMB float64

	flash        bool
	seekMs       float64 // average seek of a random read over the full stroke
	halfRotMs    float64 // half a revolution: the mean rotational latency
	transferMBps float64 // media rate of one device
	readMs       float64 // flash access times
	writeMs      float64
	destageMBps  float64 // ceiling of the cache's destage stream into this RAID group
	controllerMs float64 // per-IO array and fabric overhead, a pure delay
	channels     int     // parallel flash units per device (1 for spindles)
	stripeKB     float64 // RAID stripe unit
}

// Per-kind service parameters. The spindle figures are those of the drive generation of the
// BASIL testbeds (2009-2010 data sheets): a 15k FC drive seeks 3.5 ms on average and turns in
// 4 ms, so a random 8 KB IO takes about 5.6 ms (≈180 IOPS at queue depth 1); a 7.2k SATA drive
// seeks 8.5 ms and turns in 8.3 ms (≈78 IOPS). Flash has no positioning, only an access time, and
// serves several IOs at once on its internal channels (tens of thousands of IOPS per device).
var kindDefaults = map[string]scenario.ServiceParams{
	scenario.KindFC15k:  {AvgSeekMs: 3.5, RPM: 15000, TransferMBps: 120, DestageMBps: 200, ControllerUs: 200},
	scenario.KindSAS10k: {AvgSeekMs: 4.2, RPM: 10000, TransferMBps: 110, DestageMBps: 160, ControllerUs: 200},
	scenario.KindSATA7k: {AvgSeekMs: 8.5, RPM: 7200, TransferMBps: 90, DestageMBps: 120, ControllerUs: 200},
	scenario.KindSSD:    {ReadUs: 100, WriteUs: 150, TransferMBps: 500, DestageMBps: 1000, ControllerUs: 100},
	scenario.KindCustom: {DestageMBps: 200, ControllerUs: 200},
}

const (
	// writeSeekExtraMs: a write settles more carefully than a read before the head may write.
	writeSeekExtraMs = 0.5
	// seqPositionFraction: a sequential IO continues where the last one ended and pays only the
	// occasional head or track switch, a small fraction of a random positioning.
	seqPositionFraction = 0.02
	// tcqGain shapes tagged command queueing: a drive that can choose among k queued requests
	// (shortest positioning first) cuts its mean positioning time by 1/(1+tcqGain·ln k). With
	// 0.35 a 15k drive goes from ≈180 random IOPS at queue depth 1 to ≈260 at 4 and ≈370 at 32,
	// the shape measured on drives of that generation.
	tcqGain = 0.35
	// tcqMaxDepth: a drive reorders at most this many queued commands (SATA NCQ's 32; FC and SAS
	// drives accept more but gain little beyond), so throughput levels off past it.
	tcqMaxDepth = 32
	// destageSortDepth: the cache destages dirty blocks in elevator order, choosing among many, so
	// its positioning is that of a drive with this many requests to choose from.
	destageSortDepth = 16
	// linkMBps is the host link (4 Gb/s Fibre Channel) over which every IO's data travels.
	linkMBps = 400
	// cacheAckMs is the time for the array to copy a write into its cache and mirror it to the
	// peer storage processor before acknowledging it.
	cacheAckMs = 0.15
	// defaultChannels is the number of flash dies/channels an SSD serves in parallel.
	defaultChannels = 4
	// defaultStripeKB is the RAID stripe unit (element size) of the arrays modelled.
	defaultStripeKB = 64
)

// newDevice resolves a scenario device: the kind's defaults overridden by its service parameters.
func newDevice(d scenario.Device) (device, error) {
	def, ok := kindDefaults[d.Kind]
	if !ok {
		return device{}, fmt.Errorf("unknown device kind %q", d.Kind)
	}
	sp := def
	if o := d.Service; o != nil {
		pick := func(v, dflt float64) float64 {
			if v > 0 {
				return v
			}
			return dflt
		}
		sp.AvgSeekMs = pick(o.AvgSeekMs, def.AvgSeekMs)
		sp.RPM = pick(o.RPM, def.RPM)
		sp.TransferMBps = pick(o.TransferMBps, def.TransferMBps)
		sp.ReadUs = pick(o.ReadUs, def.ReadUs)
		sp.WriteUs = pick(o.WriteUs, def.WriteUs)
		sp.DestageMBps = pick(o.DestageMBps, def.DestageMBps)
		sp.ControllerUs = pick(o.ControllerUs, def.ControllerUs)
		sp.Channels = o.Channels
		sp.StripeKB = o.StripeKB
	}
	if d.Disks <= 0 {
		return device{}, fmt.Errorf("a device needs at least one disk, got %d", d.Disks)
	}
	if sp.TransferMBps <= 0 {
		return device{}, fmt.Errorf("device kind %q needs a transfer rate", d.Kind)
	}
	dev := device{
		kind: d.Kind, disks: d.Disks, raid: d.RAID, cacheMB: d.CacheMB,
		transferMBps: sp.TransferMBps, destageMBps: sp.DestageMBps,
		controllerMs: sp.ControllerUs / 1000, channels: 1, stripeKB: defaultStripeKB,
	}
	if sp.StripeKB > 0 {
		dev.stripeKB = sp.StripeKB
	}
	switch d.RAID {
	case "1", "10":
		dev.mirror = true
	case "5":
		dev.parity = 1
	case "6":
		dev.parity = 2
	case "0", "":
		dev.raid = "0"
	default:
		return device{}, fmt.Errorf("unknown RAID level %q", d.RAID)
	}
	if sp.RPM > 0 {
		dev.seekMs = sp.AvgSeekMs
		dev.halfRotMs = 0.5 * 60000 / sp.RPM
	} else {
		if sp.ReadUs <= 0 {
			return device{}, fmt.Errorf("device kind %q needs rpm (spindles) or read_us (flash)", d.Kind)
		}
		dev.flash = true
		dev.readMs = sp.ReadUs / 1000
		dev.writeMs = sp.WriteUs / 1000
		if dev.writeMs <= 0 {
			dev.writeMs = dev.readMs
		}
		dev.channels = defaultChannels
		if sp.Channels > 0 {
			dev.channels = sp.Channels
		}
	}
	return dev, nil
}

// servers is the number of independent service units IOs are spread over.
func (d *device) servers() float64 { return float64(d.disks * d.channels) }

// dataDisks is the number of devices holding data in a stripe (the others hold parity).
func (d *device) dataDisks() int {
	if d.mirror {
		return max(1, d.disks/2)
	}
	return d.disks - d.parity
}

// position returns the mean positioning time of a random IO when the device can choose among k
// queued requests (k >= 1); flash has an access time instead and no queue-dependent gain.
func (d *device) position(write bool, k float64) float64 {
	if d.flash {
		if write {
			return d.writeMs
		}
		return d.readMs
	}
	p := d.seekMs + d.halfRotMs
	if write {
		p += writeSeekExtraMs
	}
	return p / (1 + tcqGain*math.Log(max(1, k)))
}

// seqPosition is the positioning of a sequential IO: near zero on a spindle, the access time on flash.
func (d *device) seqPosition(write bool) float64 {
	if d.flash {
		return d.position(write, 1)
	}
	return seqPositionFraction * d.position(write, 1)
}

// transfer is the media time of kb kilobytes on one service unit.
func (d *device) transfer(kb float64) float64 {
	return kb / 1024 / (d.transferMBps / float64(d.channels)) * 1000
}

// pieces is how many stripe units (hence devices) an IO of sizeKB touches: one for an IO within
// a stripe unit, more for large IOs (aligned IOs; never more than the data devices).
func (d *device) pieces(sizeKB float64) float64 {
	return min(max(1, sizeKB/d.stripeKB), float64(d.dataDisks()))
}

// writeOps describes the back-end work of one host write of sizeKB: how many device operations
// it costs, how many of them must happen one after the other (rounds) and how many run side by
// side in a round (width). These are the RAID write penalties: RAID 0 writes the data, RAID 1/10
// writes it twice, RAID 5 and 6 read the old data and parity and write them back (4 and 6 device
// IOs for a small write) unless the write covers enough of the stripe that reading the rest of
// the stripe (reconstruct-write) or writing a full stripe is cheaper.
type writeOps struct{ ops, rounds, width float64 }

func (d *device) randomWrite(sizeKB float64) writeOps {
	m := d.pieces(sizeKB)
	switch {
	case d.mirror:
		return writeOps{ops: 2 * m, rounds: 1, width: 2 * m}
	case d.parity == 0:
		return writeOps{ops: m, rounds: 1, width: m}
	}
	p := float64(d.parity)
	data := float64(d.dataDisks())
	if m >= data { // full-stripe write: data and parity, no reads
		return writeOps{ops: m + p*m/data, rounds: 1, width: m + p}
	}
	rmw := 2 * (m + p)          // read-modify-write: read old data and parity, write both
	rcw := (data - m) + (m + p) // reconstruct-write: read the rest of the stripe, write data+parity
	if rcw < rmw {
		return writeOps{ops: rcw, rounds: 2, width: max(data-m, m+p)}
	}
	return writeOps{ops: rmw, rounds: 2, width: m + p}
}

// seqWriteFactor is how many bytes the devices write per byte of a sequential write: the cache
// gathers sequential writes into full stripes, so parity costs n/(n-p) and mirrors 2.
func (d *device) seqWriteFactor() float64 {
	switch {
	case d.mirror:
		return 2
	case d.parity > 0:
		return float64(d.disks) / float64(d.dataDisks())
	}
	return 1
}

// harmonic extends the harmonic number H(w) to real w >= 1 by linear interpolation: the mean of the
// largest of w exponential service times, in units of one, is H(w).
func harmonic(w float64) float64 {
	if w <= 1 {
		return 1
	}
	h := 0.0
	n := math.Floor(w)
	for i := 1.0; i <= n; i++ {
		h += 1 / i
	}
	return h + (w-n)/(n+1)
}

// forkJoin is the factor by which an IO split over w devices waits for the slowest of them: none
// on idle devices (service times are nearly deterministic), H(w) when queueing dominates.
func forkJoin(w, util float64) float64 {
	return 1 + (harmonic(w)-1)*min(1, max(0, util))
}
