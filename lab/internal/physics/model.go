// Package physics is the lab's storage ground truth: per-IO service times of spindles and flash,
// RAID write penalties, a write-back array cache, blending of sequential streams, host queue
// depths, SIOC's enforcement of reservations, limits and shares, and Storage vMotion copy load,
// tied together by solving each datastore's closed multi-class queueing network (every virtual
// disk's workload keeps its outstanding IOs in flight) once per sampling interval. It deliberately
// shares nothing with BASIL's equations: latency emerges from service times and queueing.
package physics

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/basil-project/basil/lab/internal/scenario"
)

// Model is a scenario's storage in motion. It is safe for concurrent use.
type Model struct {
	mu         sync.Mutex
	seed       int64
	noiseSigma float64
	queueDepth float64
	start      time.Time

	hosts       map[string]bool
	stores      []*datastore // scenario order
	storeByName map[string]*datastore
	vms         map[string]*vmState
	disks       []*diskState // scenario order
	diskByKey   map[DiskKey]*diskState
	copies      map[string]*copyLoad
}

type datastore struct {
	name       string
	dev        device
	mounted    []string
	accessible bool
	sioc       siocState
	// dirtyMB is the write backlog in the array cache, carried from one interval to the next, and
	// dirtyPerMB the device time (ms) destaging a MB of it takes.
	dirtyMB, dirtyPerMB float64
}

type siocState struct {
	enabled     bool
	automatic   bool
	thresholdMs float64
	peakPct     float64
}

type vmState struct {
	name, host string
	on         bool
}

type diskState struct {
	key      DiskKey
	vm       *vmState
	store    *datastore
	sizeGB   float64
	workload *scenario.Workload
	// storageIOAllocation
	reservation float64 // IOPS
	limit       float64 // IOPS, +Inf for unlimited
	shares      float64
}

type copyLoad struct {
	id       string
	src, dst *datastore
	mbps     float64
}

// defaultNoisePct is the relative standard deviation of sampled counters when the scenario does
// not say: 20 s samples of a steady Iometer load scatter by a few per cent.
const defaultNoisePct = 3.0

// New builds the model of a validated scenario.
func New(s *scenario.Scenario) (*Model, error) {
	m := &Model{
		seed: s.Seed, noiseSigma: defaultNoisePct / 100, queueDepth: float64(s.Settings.LUNQueueDepth),
		hosts: map[string]bool{}, storeByName: map[string]*datastore{}, vms: map[string]*vmState{},
		diskByKey: map[DiskKey]*diskState{}, copies: map[string]*copyLoad{},
	}
	if s.Settings.NoisePct != nil {
		m.noiseSigma = *s.Settings.NoisePct / 100
	}
	if m.queueDepth <= 0 {
		m.queueDepth = 32
	}
	var problems []error
	for _, h := range s.Hosts {
		m.hosts[h.Name] = true
	}
	for i := range s.Datastores {
		sd := &s.Datastores[i]
		dev, err := newDevice(sd.Device)
		if err != nil {
			problems = append(problems, fmt.Errorf("datastore %q: %w", sd.Name, err))
			continue
		}
		ds := &datastore{
			name: sd.Name, dev: dev, mounted: append([]string(nil), sd.Hosts...), accessible: !sd.Inaccessible,
			sioc: siocState{
				enabled: sd.SIOC.Enabled, automatic: sd.SIOC.ThresholdMode == "automatic",
				thresholdMs: sd.SIOC.ThresholdMs, peakPct: sd.SIOC.PeakPct,
			},
		}
		if len(ds.mounted) == 0 {
			for _, h := range s.Hosts {
				ds.mounted = append(ds.mounted, h.Name)
			}
		}
		if ds.sioc.thresholdMs == 0 {
			ds.sioc.thresholdMs = 30
		}
		if ds.sioc.peakPct == 0 {
			ds.sioc.peakPct = 90
		}
		m.stores = append(m.stores, ds)
		m.storeByName[ds.name] = ds
	}
	for _, v := range s.VMs {
		if !m.hosts[v.Host] {
			problems = append(problems, fmt.Errorf("VM %q: unknown host %q", v.Name, v.Host))
		}
		vm := &vmState{name: v.Name, host: v.Host, on: v.IsPoweredOn()}
		m.vms[v.Name] = vm
		for _, d := range v.Disks {
			key := DiskKey{VM: v.Name, Unit: d.Unit}
			ds, ok := m.storeByName[d.Datastore]
			if !ok {
				problems = append(problems, fmt.Errorf("disk %s/%s: unknown datastore %q", v.Name, d.Unit, d.Datastore))
				continue
			}
			_, shares := d.IO.Shares.Resolve()
			disk := &diskState{
				key: key, vm: vm, store: ds, sizeGB: d.SizeGB, workload: d.Workload,
				reservation: float64(d.IO.Reservation), limit: limitValue(d.IO.LimitIOPS()), shares: float64(shares),
			}
			m.disks = append(m.disks, disk)
			m.diskByKey[key] = disk
		}
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return m, nil
}

func limitValue(limit int64) float64 {
	if limit < 0 {
		return math.Inf(1)
	}
	return float64(limit)
}

// Start returns the scenario's time zero (zero until set or until the first Step).
func (m *Model) Start() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.start
}

// SetStart sets the scenario's time zero: workloads' phases, schedules and bursts count from it.
func (m *Model) SetStart(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.start = t
}

// MoveDisk places a disk's backing on another datastore (the end of a Storage vMotion).
func (m *Model) MoveDisk(k DiskKey, datastore string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.diskByKey[k]
	if !ok {
		return fmt.Errorf("unknown disk %s %s", k.VM, k.Unit)
	}
	ds, ok := m.storeByName[datastore]
	if !ok {
		return fmt.Errorf("unknown datastore %q", datastore)
	}
	d.store = ds
	return nil
}

// SetVMHost runs a VM on another host (vMotion); its IO then queues in that host.
func (m *Model) SetVMHost(vm, host string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.vms[vm]
	if !ok {
		return fmt.Errorf("unknown VM %q", vm)
	}
	if !m.hosts[host] {
		return fmt.Errorf("unknown host %q", host)
	}
	v.host = host
	return nil
}

// SetPower powers a VM on or off; a powered-off VM does no IO.
func (m *Model) SetPower(vm string, on bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.vms[vm]
	if !ok {
		return fmt.Errorf("unknown VM %q", vm)
	}
	v.on = on
	return nil
}

// SetIOAllocation sets a disk's storageIOAllocation: reservation and limit in IOPS (limit -1 for
// unlimited) and shares. Invalid values are refused, naming every bad field, and change nothing.
func (m *Model) SetIOAllocation(k DiskKey, reservation, limit int64, shares int32) error {
	var problems []error
	if reservation < 0 {
		problems = append(problems, fmt.Errorf("reservation: must be zero or a positive number of IOPS, got %d", reservation))
	}
	if limit != -1 && limit <= 0 {
		problems = append(problems, fmt.Errorf("limit: must be a positive number of IOPS or -1 for unlimited, got %d", limit))
	}
	if limit > 0 && reservation > limit {
		problems = append(problems, fmt.Errorf("reservation: %d is above the limit %d", reservation, limit))
	}
	if shares < 1 || shares > 1_000_000 {
		problems = append(problems, fmt.Errorf("shares: must be between 1 and 1000000, got %d", shares))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.diskByKey[k]
	if !ok {
		problems = append([]error{fmt.Errorf("unknown disk %s %s", k.VM, k.Unit)}, problems...)
	}
	if len(problems) > 0 {
		return errors.Join(problems...)
	}
	d.reservation, d.limit, d.shares = float64(reservation), limitValue(limit), float64(shares)
	return nil
}

// SetSIOC turns Storage I/O Control on or off for a datastore with a manual congestion threshold
// (5 to 100 ms, as vSphere accepts; when disabling, thresholdMs may be 0 to keep the current one).
func (m *Model) SetSIOC(datastore string, enabled bool, thresholdMs float64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ds, ok := m.storeByName[datastore]
	if !ok {
		return fmt.Errorf("unknown datastore %q", datastore)
	}
	if !enabled && thresholdMs == 0 {
		ds.sioc.enabled = false
		return nil
	}
	if math.IsNaN(thresholdMs) || thresholdMs < 5 || thresholdMs > 100 {
		return fmt.Errorf("thresholdMs: the congestion threshold must be between 5 and 100 ms, got %g", thresholdMs)
	}
	ds.sioc = siocState{enabled: enabled, thresholdMs: thresholdMs, peakPct: ds.sioc.peakPct}
	return nil
}

// SetSIOCAutomatic turns SIOC on or off with an automatic threshold: the latency at which the
// datastore delivers peakPct per cent (50 to 100) of its peak throughput for the current load.
func (m *Model) SetSIOCAutomatic(datastore string, enabled bool, peakPct float64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ds, ok := m.storeByName[datastore]
	if !ok {
		return fmt.Errorf("unknown datastore %q", datastore)
	}
	if math.IsNaN(peakPct) || peakPct < 50 || peakPct > 100 {
		return fmt.Errorf("peakPct: must be between 50 and 100, got %g", peakPct)
	}
	ds.sioc = siocState{enabled: enabled, automatic: true, thresholdMs: ds.sioc.thresholdMs, peakPct: peakPct}
	return nil
}

// SetAccessible marks a datastore accessible or not; disks on an inaccessible datastore do no IO.
func (m *Model) SetAccessible(datastore string, accessible bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ds, ok := m.storeByName[datastore]
	if !ok {
		return fmt.Errorf("unknown datastore %q", datastore)
	}
	ds.accessible = accessible
	return nil
}

// StartCopy loads a Storage vMotion copy's source with sequential reads and its target with
// sequential writes of mbps megabytes per second until StopCopy.
func (m *Model) StartCopy(id, srcDatastore, dstDatastore string, mbps float64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var problems []error
	if id == "" {
		problems = append(problems, errors.New("id: is required"))
	} else if _, dup := m.copies[id]; dup {
		problems = append(problems, fmt.Errorf("id: a copy %q is already running", id))
	}
	src, ok := m.storeByName[srcDatastore]
	if !ok {
		problems = append(problems, fmt.Errorf("srcDatastore: unknown datastore %q", srcDatastore))
	}
	dst, ok := m.storeByName[dstDatastore]
	if !ok {
		problems = append(problems, fmt.Errorf("dstDatastore: unknown datastore %q", dstDatastore))
	}
	if math.IsNaN(mbps) || math.IsInf(mbps, 0) || mbps <= 0 {
		problems = append(problems, fmt.Errorf("mbps: must be a positive rate, got %g", mbps))
	}
	if len(problems) > 0 {
		return errors.Join(problems...)
	}
	m.copies[id] = &copyLoad{id: id, src: src, dst: dst, mbps: mbps}
	return nil
}

// StopCopy ends a copy's load; an unknown id is ignored (the copy already ended).
func (m *Model) StopCopy(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.copies, id)
}

// DiskDatastore returns the datastore a disk is on.
func (m *Model) DiskDatastore(k DiskKey) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.diskByKey[k]
	if !ok {
		return "", false
	}
	return d.store.name, true
}

// copyIDs returns the running copies in a fixed order.
func (m *Model) copyIDs() []string {
	ids := make([]string, 0, len(m.copies))
	for id := range m.copies {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
