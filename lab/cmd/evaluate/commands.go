package main

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/basil-project/basil/lab/internal/physics"
)

// description is what `describe` answers: the pod's datastores and the disks that can move.
type description struct {
	Name       string      `json:"name"`
	Pod        string      `json:"pod"`
	Seed       int64       `json:"seed"`
	Hosts      []string    `json:"hosts"`
	Datastores []storeInfo `json:"datastores"`
	Disks      []diskInfo  `json:"disks"`
}

type storeInfo struct {
	Name        string   `json:"name"`
	CapacityGB  float64  `json:"capacity_gb"`
	FixedGB     float64  `json:"fixed_gb"` // space the pod's movable disks can never use
	Hosts       []string `json:"hosts"`
	Kind        string   `json:"kind"`
	Devices     int      `json:"devices"`
	RAID        string   `json:"raid"`
	Maintenance bool     `json:"maintenance"`
}

type diskInfo struct {
	ID        string  `json:"id"`
	VM        string  `json:"vm"`
	Host      string  `json:"host"`
	Datastore string  `json:"datastore"`
	SizeGB    float64 `json:"size_gb"`
	Workload  string  `json:"workload"`
}

func describe(req *request) (*description, error) {
	l, err := newLab(req)
	if err != nil {
		return nil, err
	}
	d := &description{Name: l.s.Name, Pod: l.pod, Seed: l.s.Seed}
	for _, h := range l.s.Hosts {
		d.Hosts = append(d.Hosts, h.Name)
	}
	fixed := l.fixedGB()
	for _, ds := range l.s.Datastores {
		if ds.Pod != l.pod {
			continue
		}
		d.Datastores = append(d.Datastores, storeInfo{
			Name: ds.Name, CapacityGB: ds.CapacityGB, FixedGB: fixed[ds.Name], Hosts: ds.Hosts,
			Kind: ds.Device.Kind, Devices: ds.Device.Disks, RAID: ds.Device.RAID, Maintenance: ds.Maintenance,
		})
	}
	for _, i := range l.movable {
		ref := l.disks[i]
		vm := l.s.VMs[ref.vmIndex]
		kind := ""
		for _, t := range vm.Tags {
			if t.Category == "workload" {
				kind = t.Name
			}
		}
		d.Disks = append(d.Disks, diskInfo{ID: ref.id, VM: ref.vm, Host: ref.host, Datastore: ref.home, SizeGB: ref.sizeGB, Workload: kind})
	}
	return d, nil
}

// fixedGB is per pod datastore the space taken by what never moves: unmodelled files and disks
// without IO.
func (l *lab) fixedGB() map[string]float64 {
	out := map[string]float64{}
	for _, ds := range l.s.Datastores {
		if _, ok := l.storeAt[ds.Name]; ok {
			out[ds.Name] = ds.UsedGB
		}
	}
	for _, d := range l.disks {
		if _, ok := l.storeAt[d.home]; ok && !d.movable {
			out[d.home] += d.sizeGB
		}
	}
	return out
}

// measurement is what `measure` answers: per interval what vCenter would report, and the truth.
type measurement struct {
	Intervals []counters     `json:"intervals"`
	Truth     placementTruth `json:"truth"`
}

// counters are one interval's vCenter counters for the pod: host-level datastore.* per host and
// datastore, and virtualDisk.* per movable disk, as integers in vCenter's units (vCenter's
// latencies in ms are whole milliseconds; the µs counters are finer).
type counters struct {
	Time  int64        `json:"time"` // end of the interval, seconds since the epoch
	Hosts []hostSample `json:"hosts"`
	Disks []diskSample `json:"disks"`
}

type hostSample struct {
	Host                    string `json:"host"`
	Datastore               string `json:"datastore"`
	ReadIOPS                int64  `json:"read_iops"`
	WriteIOPS               int64  `json:"write_iops"`
	ReadOIO                 int64  `json:"read_oio"`
	WriteOIO                int64  `json:"write_oio"`
	ReadLatencyMs           int64  `json:"read_latency_ms"`
	WriteLatencyMs          int64  `json:"write_latency_ms"`
	ReadKBps                int64  `json:"read_kbps"`
	WriteKBps               int64  `json:"write_kbps"`
	SizeNormalizedLatencyUs int64  `json:"size_normalized_latency_us"`
}

type diskSample struct {
	ID             string `json:"id"`
	ReadIOPS       int64  `json:"read_iops"`
	WriteIOPS      int64  `json:"write_iops"`
	ReadKBps       int64  `json:"read_kbps"`
	WriteKBps      int64  `json:"write_kbps"`
	ReadLatencyMs  int64  `json:"read_latency_ms"`
	WriteLatencyMs int64  `json:"write_latency_ms"`
	ReadLatencyUs  int64  `json:"read_latency_us"`
	WriteLatencyUs int64  `json:"write_latency_us"`
	ReadOIO        int64  `json:"read_oio"`
	WriteOIO       int64  `json:"write_oio"`
	ReadIOSizeB    int64  `json:"read_io_size_bytes"`
	WriteIOSizeB   int64  `json:"write_io_size_bytes"`
	SmallSeeks     int64  `json:"small_seeks"`
	MediumSeeks    int64  `json:"medium_seeks"`
	LargeSeeks     int64  `json:"large_seeks"`
}

// counter rounds a figure as vCenter's integer counters do (negative and NaN read as 0).
func counter(x float64) int64 {
	if math.IsNaN(x) || x <= 0 {
		return 0
	}
	if x >= math.MaxInt32 {
		return math.MaxInt32
	}
	return int64(math.Round(x))
}

func measure(req *request) (*measurement, error) {
	l, err := newLab(req)
	if err != nil {
		return nil, err
	}
	w, err := window(req)
	if err != nil {
		return nil, err
	}
	where, err := l.resolve(req.Placement, "placement")
	if err != nil {
		return nil, err
	}
	m, err := physics.New(l.s)
	if err != nil {
		return nil, err
	}
	m.SetStart(t0)
	for _, i := range l.movable {
		if where[i] != l.disks[i].home {
			if err := m.MoveDisk(physics.DiskKey{VM: l.disks[i].vm, Unit: l.disks[i].unit}, where[i]); err != nil {
				return nil, err
			}
		}
	}
	if err := l.qos(m, req); err != nil {
		return nil, err
	}
	out := &measurement{}
	per := map[string][]storeTruth{}
	for k := w.first; k <= w.last; k++ {
		iv := m.Step(intervalEnd(k), step)
		if k < w.report {
			continue
		}
		truths := l.truthOf(iv, where)
		for _, ds := range l.stores {
			per[ds] = append(per[ds], truths[ds])
		}
		out.Intervals = append(out.Intervals, l.counters(iv))
	}
	out.Truth = l.summarise(per, where)
	return out, nil
}

func (l *lab) counters(iv *physics.Interval) counters {
	c := counters{Time: iv.End.Unix(), Hosts: []hostSample{}, Disks: []diskSample{}}
	keys := make([]physics.HostDatastore, 0, len(iv.HostDatastores))
	for k := range iv.HostDatastores {
		if _, ok := l.storeAt[k.Datastore]; ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].Datastore != keys[b].Datastore {
			return keys[a].Datastore < keys[b].Datastore
		}
		return keys[a].Host < keys[b].Host
	})
	for _, k := range keys {
		h := iv.HostDatastores[k].Measured
		c.Hosts = append(c.Hosts, hostSample{
			Host: k.Host, Datastore: k.Datastore,
			ReadIOPS: counter(h.ReadIOPS), WriteIOPS: counter(h.WriteIOPS),
			ReadOIO: counter(h.ReadOIO), WriteOIO: counter(h.WriteOIO),
			ReadLatencyMs: counter(h.ReadLatencyMs), WriteLatencyMs: counter(h.WriteLatencyMs),
			ReadKBps: counter(h.ReadKBps), WriteKBps: counter(h.WriteKBps),
			SizeNormalizedLatencyUs: counter(h.SizeNormalizedLatencyUs),
		})
	}
	for _, i := range l.movable {
		ref := l.disks[i]
		d := iv.Disks[physics.DiskKey{VM: ref.vm, Unit: ref.unit}].Measured
		c.Disks = append(c.Disks, diskSample{
			ID: ref.id, ReadIOPS: counter(d.ReadIOPS), WriteIOPS: counter(d.WriteIOPS),
			ReadKBps: counter(d.ReadKBps), WriteKBps: counter(d.WriteKBps),
			ReadLatencyMs: counter(d.ReadLatencyMs), WriteLatencyMs: counter(d.WriteLatencyMs),
			ReadLatencyUs: counter(d.ReadLatencyMs * 1000), WriteLatencyUs: counter(d.WriteLatencyMs * 1000),
			ReadOIO: counter(d.ReadOIO), WriteOIO: counter(d.WriteOIO),
			ReadIOSizeB: counter(d.ReadIOSizeKB * 1024), WriteIOSizeB: counter(d.WriteIOSizeKB * 1024),
			SmallSeeks: counter(d.SmallSeeks), MediumSeeks: counter(d.MediumSeeks), LargeSeeks: counter(d.LargeSeeks),
		})
	}
	return c
}

// scores is what `score` answers: each placement's truth, in request order.
type scores struct {
	Placements []placementTruth `json:"placements"`
}

func score(req *request) (*scores, error) {
	l, err := newLab(req)
	if err != nil {
		return nil, err
	}
	w, err := window(req)
	if err != nil {
		return nil, err
	}
	if len(req.Placements) == 0 {
		return nil, errors.New("placements: give at least one placement ({} is the scenario's own)")
	}
	out := &scores{}
	for n, p := range req.Placements {
		where, err := l.resolve(p, fmt.Sprintf("placements[%d]", n))
		if err != nil {
			return nil, err
		}
		t, err := l.truth(where, w)
		if err != nil {
			return nil, err
		}
		out.Placements = append(out.Placements, t)
	}
	return out, nil
}

// qos applies a measure request's SIOC settings: shares per disk (reservation and limit kept as the
// scenario has them) and SIOC on per datastore with its congestion threshold.
func (l *lab) qos(m *physics.Model, req *request) error {
	ids := make([]string, 0, len(req.Shares))
	for id := range req.Shares {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var problems []error
	for _, id := range ids {
		i, ok := l.diskAt[id]
		if !ok {
			problems = append(problems, fmt.Errorf("shares[%q]: no such disk", id))
			continue
		}
		d := l.disks[i]
		res, lim := l.allocation(i)
		if err := m.SetIOAllocation(physics.DiskKey{VM: d.vm, Unit: d.unit}, res, lim, req.Shares[id]); err != nil {
			problems = append(problems, fmt.Errorf("shares[%q]: %w", id, err))
		}
	}
	names := make([]string, 0, len(req.SIOCMs))
	for ds := range req.SIOCMs {
		names = append(names, ds)
	}
	sort.Strings(names)
	for _, ds := range names {
		if err := m.SetSIOC(ds, true, req.SIOCMs[ds]); err != nil {
			problems = append(problems, fmt.Errorf("sioc_ms[%q]: %w", ds, err))
		}
	}
	return errors.Join(problems...)
}

// allocation is disk i's reservation and limit as the scenario configures them.
func (l *lab) allocation(i int) (int64, int64) {
	d := l.disks[i]
	io := l.s.VMs[d.vmIndex].Disks[d.dskIndex].IO
	return io.Reservation, io.LimitIOPS()
}
