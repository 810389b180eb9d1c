package vc

import (
	"math"
	"sync"
	"time"

	"github.com/basil-project/basil/lab/internal/physics"
)

// The performance counters the lab computes, with the ids and names of the simulator's vCenter
// counter list (simulator/vpx). Values are stored as vCenter reports them: integers, latency in
// milliseconds (or microseconds for *US counters), IO size in bytes, rates per second, KB/s.

type diskCounter struct {
	key   int32
	value func(m *physics.DiskMetrics) float64
}

// diskCounters are the VM-level virtualDisk.* counters, per disk instance ("scsi0:1").
var diskCounters = []diskCounter{
	{171, func(m *physics.DiskMetrics) float64 { return m.ReadIOPS }},              // numberReadAveraged.average
	{172, func(m *physics.DiskMetrics) float64 { return m.WriteIOPS }},             // numberWriteAveraged.average
	{173, func(m *physics.DiskMetrics) float64 { return m.ReadKBps }},              // read.average (KBps)
	{174, func(m *physics.DiskMetrics) float64 { return m.WriteKBps }},             // write.average (KBps)
	{175, func(m *physics.DiskMetrics) float64 { return m.ReadLatencyMs }},         // totalReadLatency.average (ms)
	{176, func(m *physics.DiskMetrics) float64 { return m.WriteLatencyMs }},        // totalWriteLatency.average (ms)
	{344, func(m *physics.DiskMetrics) float64 { return m.ReadOIO }},               // readOIO.latest
	{345, func(m *physics.DiskMetrics) float64 { return m.WriteOIO }},              // writeOIO.latest
	{527, func(m *physics.DiskMetrics) float64 { return m.ReadIOSizeKB * 1024 }},   // readIOSize.latest (bytes)
	{528, func(m *physics.DiskMetrics) float64 { return m.WriteIOSizeKB * 1024 }},  // writeIOSize.latest (bytes)
	{529, func(m *physics.DiskMetrics) float64 { return m.SmallSeeks }},            // smallSeeks.latest
	{530, func(m *physics.DiskMetrics) float64 { return m.MediumSeeks }},           // mediumSeeks.latest
	{531, func(m *physics.DiskMetrics) float64 { return m.LargeSeeks }},            // largeSeeks.latest
	{532, func(m *physics.DiskMetrics) float64 { return m.ReadLatencyMs * 1000 }},  // readLatencyUS.latest (µs)
	{533, func(m *physics.DiskMetrics) float64 { return m.WriteLatencyMs * 1000 }}, // writeLatencyUS.latest (µs)
}

type hostCounter struct {
	key   int32
	value func(m *physics.HostDatastoreMetrics, ds *physics.DatastoreStats) float64
}

// hostCounters are the host-level datastore.* counters, per datastore instance (its volume UUID).
var hostCounters = []hostCounter{
	{351, func(m *physics.HostDatastoreMetrics, _ *physics.DatastoreStats) float64 { return m.ReadIOPS }},       // datastoreReadIops.latest
	{352, func(m *physics.HostDatastoreMetrics, _ *physics.DatastoreStats) float64 { return m.WriteIOPS }},      // datastoreWriteIops.latest
	{353, func(m *physics.HostDatastoreMetrics, _ *physics.DatastoreStats) float64 { return m.ReadOIO }},        // datastoreReadOIO.latest
	{354, func(m *physics.HostDatastoreMetrics, _ *physics.DatastoreStats) float64 { return m.WriteOIO }},       // datastoreWriteOIO.latest
	{178, func(m *physics.HostDatastoreMetrics, _ *physics.DatastoreStats) float64 { return m.ReadIOPS }},       // numberReadAveraged.average
	{179, func(m *physics.HostDatastoreMetrics, _ *physics.DatastoreStats) float64 { return m.WriteIOPS }},      // numberWriteAveraged.average
	{182, func(m *physics.HostDatastoreMetrics, _ *physics.DatastoreStats) float64 { return m.ReadLatencyMs }},  // totalReadLatency.average (ms)
	{183, func(m *physics.HostDatastoreMetrics, _ *physics.DatastoreStats) float64 { return m.WriteLatencyMs }}, // totalWriteLatency.average (ms)
	{537, func(m *physics.HostDatastoreMetrics, _ *physics.DatastoreStats) float64 { return m.MaxQueueDepth }},  // datastoreMaxQueueDepth.latest
	{186, func(m *physics.HostDatastoreMetrics, _ *physics.DatastoreStats) float64 {
		return m.SizeNormalizedLatencyUs // sizeNormalizedDatastoreLatency.average (µs)
	}},
	{180, func(m *physics.HostDatastoreMetrics, _ *physics.DatastoreStats) float64 { return m.ReadKBps }},  // read.average (KBps)
	{181, func(m *physics.HostDatastoreMetrics, _ *physics.DatastoreStats) float64 { return m.WriteKBps }}, // write.average (KBps)
	{185, func(_ *physics.HostDatastoreMetrics, ds *physics.DatastoreStats) float64 {
		// datastoreIops.average: SIOC's aggregate over every host of the datastore.
		if ds == nil {
			return 0
		}
		return ds.ReadIOPS + ds.WriteIOPS
	}},
}

// maxTotalLatencyKey is datastore.maxTotalLatency.latest: the host's highest latency over its
// datastores, on the aggregate instance "".
const maxTotalLatencyKey = 184

var (
	diskCounterIndex = indexOf(len(diskCounters), func(i int) int32 { return diskCounters[i].key })
	hostCounterIndex = indexOf(len(hostCounters), func(i int) int32 { return hostCounters[i].key })
)

func indexOf(n int, key func(int) int32) map[int32]int {
	m := make(map[int32]int, n)
	for i := 0; i < n; i++ {
		m[key(i)] = i
	}
	return m
}

// sample is one real-time interval in compact form: the counters exactly as QueryPerf returns
// them, and the ground truth the control API reports.
type sample struct {
	end        time.Time
	disk       []int32   // per disk, len(diskCounters) values
	pair       []int32   // per host-datastore pair, len(hostCounters) values
	hostMax    []int32   // per host, datastore.maxTotalLatency
	diskTruth  []float32 // per disk: read IOPS, write IOPS, read ms, write ms, read KBps, write KBps
	diskStore  []int16   // per disk, index of the datastore it was on
	storeTruth []physics.DatastoreStats
	totalIOPS  float64
	avgLatency float64
}

const truthFields = 6

// perfStore is the one hour of real-time samples vCenter keeps, as a ring.
type perfStore struct {
	mu    sync.RWMutex
	inv   *inventory
	ring  []*sample
	head  int // next slot to write
	count int
}

func newPerfStore(inv *inventory) *perfStore {
	return &perfStore{inv: inv, ring: make([]*sample, HistoryIntervals)}
}

// add converts a solved interval into the next sample, reusing the oldest slot.
func (p *perfStore) add(iv *physics.Interval, placement []int16) {
	inv := p.inv
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.ring[p.head]
	if s == nil {
		s = &sample{
			disk:       make([]int32, len(inv.disks)*len(diskCounters)),
			pair:       make([]int32, len(inv.pairs)*len(hostCounters)),
			hostMax:    make([]int32, len(inv.hosts)),
			diskTruth:  make([]float32, len(inv.disks)*truthFields),
			diskStore:  make([]int16, len(inv.disks)),
			storeTruth: make([]physics.DatastoreStats, len(inv.stores)),
		}
		p.ring[p.head] = s
	}
	s.end = iv.End
	s.totalIOPS, s.avgLatency = iv.TotalIOPS, iv.AvgLatencyMs
	copy(s.diskStore, placement)
	for i, d := range inv.disks {
		st := iv.Disks[d.physicsKey()]
		row := s.disk[i*len(diskCounters) : (i+1)*len(diskCounters)]
		for c, dc := range diskCounters {
			row[c] = toCounter(dc.value(&st.Measured))
		}
		t := s.diskTruth[i*truthFields : (i+1)*truthFields]
		t[0], t[1] = float32(st.True.ReadIOPS), float32(st.True.WriteIOPS)
		t[2], t[3] = float32(st.True.ReadLatencyMs), float32(st.True.WriteLatencyMs)
		t[4], t[5] = float32(st.True.ReadKBps), float32(st.True.WriteKBps)
	}
	for i, d := range inv.stores {
		s.storeTruth[i] = iv.Datastores[d.name]
	}
	for i := range s.hostMax {
		s.hostMax[i] = 0
	}
	for i, pr := range inv.pairs {
		st, ok := iv.HostDatastores[physics.HostDatastore{Host: pr.host.name, Datastore: pr.store.name}]
		ds := s.storeTruth[pr.store.idx]
		row := s.pair[i*len(hostCounters) : (i+1)*len(hostCounters)]
		if !ok {
			st = physics.HostDatastoreStats{}
		}
		for c, hc := range hostCounters {
			row[c] = toCounter(hc.value(&st.Measured, &ds))
		}
		if m := toCounter(math.Max(st.Measured.ReadLatencyMs, st.Measured.WriteLatencyMs)); m > s.hostMax[pr.host.idx] {
			s.hostMax[pr.host.idx] = m
		}
	}
	p.head = (p.head + 1) % len(p.ring)
	if p.count < len(p.ring) {
		p.count++
	}
}

func toCounter(x float64) int32 {
	if math.IsNaN(x) || x <= 0 {
		return 0
	}
	if x >= math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(math.Round(x))
}

// window returns the samples, oldest first, whose end lies in (after, until]; a zero bound is open.
// The caller holds p.mu for reading.
func (p *perfStore) window(after, until time.Time) []*sample {
	out := make([]*sample, 0, p.count)
	for i := 0; i < p.count; i++ {
		s := p.ring[(p.head-p.count+i+len(p.ring))%len(p.ring)]
		if !after.IsZero() && !s.end.After(after) {
			continue
		}
		if !until.IsZero() && s.end.After(until) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// withLast calls f with up to n most recent samples (all when n <= 0), oldest first, while
// holding the store's read lock: the samples must not be kept beyond f.
func (p *perfStore) withLast(n int, f func([]*sample)) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	all := p.window(time.Time{}, time.Time{})
	if n > 0 && len(all) > n {
		all = all[len(all)-n:]
	}
	f(all)
}
