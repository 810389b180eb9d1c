package vc

import (
	"fmt"
	"time"
)

// Ground truth and placement, for the control API: what the physics really did (not what vCenter
// sampled) and where everything is, keyed so a test can match them with what it reads over the
// vSphere API (VM moid + unit, datastore moid and volume UUID, interval end = sample timestamp).

// Truth is the ground truth of the last N intervals.
type Truth struct {
	Intervals    int              `json:"intervals"`
	From         time.Time        `json:"from"` // end of the first interval averaged
	To           time.Time        `json:"to"`   // end of the last interval averaged
	TotalIOPS    float64          `json:"total_iops"`
	AvgLatencyMs float64          `json:"avg_latency_ms"` // IOPS-weighted over all disks
	Disks        []DiskTruth      `json:"disks"`
	Datastores   []DatastoreTruth `json:"datastores"`
}

// DiskTruth is one virtual disk's true throughput and latency.
type DiskTruth struct {
	VM             string  `json:"vm"`
	VMMoid         string  `json:"vm_moid"`
	Unit           string  `json:"unit"`
	Datastore      string  `json:"datastore"` // where it was at the end of the last interval
	DatastoreMoid  string  `json:"datastore_moid"`
	ReadIOPS       float64 `json:"read_iops"`
	WriteIOPS      float64 `json:"write_iops"`
	IOPS           float64 `json:"iops"`
	ReadLatencyMs  float64 `json:"read_latency_ms"`
	WriteLatencyMs float64 `json:"write_latency_ms"`
	LatencyMs      float64 `json:"latency_ms"` // IOPS-weighted read and write
	ReadKBps       float64 `json:"read_kbps"`
	WriteKBps      float64 `json:"write_kbps"`
}

// DatastoreTruth is one datastore's true load.
type DatastoreTruth struct {
	Name            string  `json:"name"`
	Moid            string  `json:"moid"`
	UUID            string  `json:"uuid"`
	ReadIOPS        float64 `json:"read_iops"`
	WriteIOPS       float64 `json:"write_iops"`
	IOPS            float64 `json:"iops"`
	TotalOIO        float64 `json:"total_oio"`
	ReadLatencyMs   float64 `json:"read_latency_ms"`
	WriteLatencyMs  float64 `json:"write_latency_ms"`
	AvgLatencyMs    float64 `json:"avg_latency_ms"`
	DeviceLatencyMs float64 `json:"device_latency_ms"`
	Utilization     float64 `json:"utilization"`
	CongestedShare  float64 `json:"congested_share"` // fraction of the intervals SIOC saw congestion
	ThresholdMs     float64 `json:"threshold_ms"`
	CopyMBps        float64 `json:"copy_mbps"`
}

// weighted averages x over intervals by weight w, or plainly when no weight.
type weighted struct{ sum, wsum, plain float64 }

func (a *weighted) add(x, w float64) { a.sum += x * w; a.wsum += w; a.plain += x }
func (a *weighted) mean(n int) float64 {
	if a.wsum > 0 {
		return a.sum / a.wsum
	}
	if n == 0 {
		return 0
	}
	return a.plain / float64(n)
}

// GroundTruth averages the last n solved intervals (1 when n <= 0): IOPS arithmetically,
// latencies weighted by IOPS.
func (l *Lab) GroundTruth(n int) (*Truth, error) {
	if n <= 0 {
		n = 1
	}
	if n > HistoryIntervals {
		return nil, fmt.Errorf("intervals: at most %d are kept, asked %d", HistoryIntervals, n)
	}
	inv := l.inv
	t := &Truth{}
	var err error
	l.perf.withLast(n, func(samples []*sample) {
		if len(samples) == 0 {
			err = fmt.Errorf("no interval has been solved yet (simulated time starts at %s; step the clock)", l.clock.Now().Format(time.RFC3339))
			return
		}
		k := len(samples)
		t.Intervals, t.From, t.To = k, samples[0].end, samples[k-1].end
		var lat weighted
		for _, s := range samples {
			t.TotalIOPS += s.totalIOPS / float64(k)
			lat.add(s.avgLatency, s.totalIOPS)
		}
		t.AvgLatencyMs = lat.mean(k)
		last := samples[k-1]
		for i, d := range inv.disks {
			dt := DiskTruth{VM: d.vm.name, VMMoid: d.vm.ref.Value, Unit: d.unit}
			ds := inv.stores[last.diskStore[i]]
			dt.Datastore, dt.DatastoreMoid = ds.name, ds.ref.Value
			var rl, wl, al weighted
			for _, s := range samples {
				v := s.diskTruth[i*truthFields : (i+1)*truthFields]
				r, w := float64(v[0]), float64(v[1])
				dt.ReadIOPS += r / float64(k)
				dt.WriteIOPS += w / float64(k)
				dt.ReadKBps += float64(v[4]) / float64(k)
				dt.WriteKBps += float64(v[5]) / float64(k)
				rl.add(float64(v[2]), r)
				wl.add(float64(v[3]), w)
				al.add(float64(v[2]), r)
				al.add(float64(v[3]), w)
			}
			dt.IOPS = dt.ReadIOPS + dt.WriteIOPS
			dt.ReadLatencyMs, dt.WriteLatencyMs = rl.mean(k), wl.mean(k)
			dt.LatencyMs = al.mean(2 * k)
			t.Disks = append(t.Disks, dt)
		}
		for i, d := range inv.stores {
			st := DatastoreTruth{Name: d.name, Moid: d.ref.Value, UUID: d.uuid}
			var rl, wl, al, dl weighted
			for _, s := range samples {
				x := s.storeTruth[i]
				st.ReadIOPS += x.ReadIOPS / float64(k)
				st.WriteIOPS += x.WriteIOPS / float64(k)
				st.TotalOIO += x.TotalOIO / float64(k)
				st.Utilization += x.Utilization / float64(k)
				st.CopyMBps += x.CopyMBps / float64(k)
				if x.Congested {
					st.CongestedShare += 1 / float64(k)
				}
				rl.add(x.ReadLatencyMs, x.ReadIOPS)
				wl.add(x.WriteLatencyMs, x.WriteIOPS)
				al.add(x.AvgLatencyMs, x.ReadIOPS+x.WriteIOPS)
				dl.add(x.DeviceLatencyMs, x.ReadIOPS+x.WriteIOPS)
			}
			st.IOPS = st.ReadIOPS + st.WriteIOPS
			st.ReadLatencyMs, st.WriteLatencyMs = rl.mean(k), wl.mean(k)
			st.AvgLatencyMs, st.DeviceLatencyMs = al.mean(k), dl.mean(k)
			st.ThresholdMs = last.storeTruth[i].ThresholdMs
			t.Datastores = append(t.Datastores, st)
		}
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Placement is where everything is now, with each disk's IO settings.
type Placement struct {
	Time        time.Time            `json:"time"`
	VMs         []VMPlacement        `json:"vms"`
	Datastores  []DatastorePlacement `json:"datastores"`
	Relocations []RelocationState    `json:"relocations"`
}

// VMPlacement is a VM's host, home datastore and disks.
type VMPlacement struct {
	Name      string          `json:"name"`
	Moid      string          `json:"moid"`
	Host      string          `json:"host"`
	HostMoid  string          `json:"host_moid"`
	Home      string          `json:"home"`
	PoweredOn bool            `json:"powered_on"`
	Disks     []DiskPlacement `json:"disks"`
}

// DiskPlacement is a disk's datastore, backing file and storageIOAllocation.
type DiskPlacement struct {
	Unit          string `json:"unit"`
	Key           int32  `json:"key"`
	Datastore     string `json:"datastore"`
	DatastoreMoid string `json:"datastore_moid"`
	FileName      string `json:"file_name"`
	CapacityKB    int64  `json:"capacity_kb"`
	Reservation   int64  `json:"reservation"`
	Limit         int64  `json:"limit"`
	Shares        int32  `json:"shares"`
	SharesLevel   string `json:"shares_level"`
}

// DatastorePlacement is a datastore's state.
type DatastorePlacement struct {
	Name          string   `json:"name"`
	Moid          string   `json:"moid"`
	UUID          string   `json:"uuid"`
	CapacityBytes int64    `json:"capacity_bytes"`
	FreeBytes     int64    `json:"free_bytes"`
	Accessible    bool     `json:"accessible"`
	Maintenance   string   `json:"maintenance"`
	SIOCEnabled   bool     `json:"sioc_enabled"`
	SIOCMode      string   `json:"sioc_mode"`
	ThresholdMs   int32    `json:"sioc_threshold_ms"`
	PeakPct       int32    `json:"sioc_peak_pct"`
	Hosts         []string `json:"hosts"`
}

// RelocationState is a queued or running Storage vMotion.
type RelocationState struct {
	Task     string `json:"task"`
	VM       string `json:"vm"`
	Running  bool   `json:"running"`
	Progress int32  `json:"progress"`
}

// Placement reports the current placement and IO settings.
func (l *Lab) Placement() *Placement {
	inv := l.inv
	p := &Placement{Time: l.clock.Now()}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range inv.vms {
		vp := VMPlacement{Name: v.name, Moid: v.ref.Value, Host: v.host.name, HostMoid: v.host.ref.Value, Home: v.home.name, PoweredOn: v.poweredOn}
		for _, d := range v.disks {
			vp.Disks = append(vp.Disks, DiskPlacement{
				Unit: d.unit, Key: d.key, Datastore: d.ds.name, DatastoreMoid: d.ds.ref.Value, FileName: d.fileName(d.ds),
				CapacityKB: d.capacityKB, Reservation: d.alloc.reservation, Limit: d.alloc.limit,
				Shares: d.alloc.shares, SharesLevel: string(d.alloc.level),
			})
		}
		p.VMs = append(p.VMs, vp)
	}
	for _, d := range inv.stores {
		dp := DatastorePlacement{
			Name: d.name, Moid: d.ref.Value, UUID: d.uuid, CapacityBytes: d.capacity, FreeBytes: d.free(),
			Accessible: d.accessible, Maintenance: string(d.maintenance), SIOCEnabled: d.iorm.Enabled,
			SIOCMode: d.iorm.CongestionThresholdMode, ThresholdMs: d.iorm.CongestionThreshold, PeakPct: d.iorm.PercentOfPeakThroughput,
		}
		for _, h := range inv.hosts {
			if d.mounted[h] {
				dp.Hosts = append(dp.Hosts, h.name)
			}
		}
		p.Datastores = append(p.Datastores, dp)
	}
	for _, rel := range l.relocs.queue {
		p.Relocations = append(p.Relocations, RelocationState{Task: rel.task.ref().Value, VM: rel.vm.name})
	}
	for _, rel := range l.relocs.running {
		p.Relocations = append(p.Relocations, RelocationState{Task: rel.task.ref().Value, VM: rel.vm.name, Running: true, Progress: rel.pct})
	}
	return p
}

// Settings are the lab's runtime knobs the control API reads and sets.
type Settings struct {
	MaxQueryMetrics    int64 `json:"max_query_metrics"`
	CapRealtimeQueries bool  `json:"cap_realtime_queries"`
	// DropServerCertificate makes the ExtensionManager keep no extension server certificate, as a
	// vCenter older than 8.0.2 (which added ExtensionServerInfo.serverCertificate) does.
	DropServerCertificate bool `json:"drop_server_certificate"`
}

// CurrentSettings returns the knobs.
func (l *Lab) CurrentSettings() Settings {
	return Settings{
		MaxQueryMetrics: l.maxQueryMetrics.Load(), CapRealtimeQueries: l.capRealtime.Load(),
		DropServerCertificate: l.dropServerCert.Load(),
	}
}

// SetDropServerCertificate makes the ExtensionManager drop server certificates (or keep them).
func (l *Lab) SetDropServerCertificate(on bool) { l.dropServerCert.Store(on) }

// SetCapRealtimeQueries makes maxQueryMetrics apply to real-time queries too (or not).
func (l *Lab) SetCapRealtimeQueries(on bool) { l.capRealtime.Store(on) }
