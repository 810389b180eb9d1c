package main

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/basil-project/basil/lab/internal/generate"
	"github.com/basil-project/basil/lab/internal/physics"
	"github.com/basil-project/basil/lab/internal/scenario"
)

// request is every subcommand's input; each uses the fields it needs.
type request struct {
	Source          source              `json:"source"`
	Pod             string              `json:"pod,omitempty"`
	Placement       map[string]string   `json:"placement,omitempty"`
	Placements      []map[string]string `json:"placements,omitempty"`
	Start           int                 `json:"start"`
	Warmup          int                 `json:"warmup"`
	Intervals       int                 `json:"intervals"`
	HeadroomPct     float64             `json:"headroom_pct"`
	MaxCombinations int                 `json:"max_combinations,omitempty"`
	// measure only: SIOC shares per disk ("vm/unit") and SIOC turned on with this congestion
	// threshold (ms) per datastore, set before the first interval (SIOC as the lab models it).
	Shares map[string]int32   `json:"shares,omitempty"`
	SIOCMs map[string]float64 `json:"sioc_ms,omitempty"`
}

type source struct {
	File      string `json:"file,omitempty"`
	Family    string `json:"family,omitempty"`
	Seed      *int64 `json:"seed,omitempty"`
	Workloads int    `json:"workloads,omitempty"`
	Stores    int    `json:"stores,omitempty"`
}

// step is the sampling interval; t0 the scenario's start in every evaluation.
const step = 20 * time.Second

var t0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

// load builds and validates the scenario a source names.
func load(src source) (*scenario.Scenario, error) {
	seed := func(def int64) int64 {
		if src.Seed != nil {
			return *src.Seed
		}
		return def
	}
	count := func(v, def, lo, hi int, field string) (int, error) {
		if v == 0 {
			return def, nil
		}
		if v < lo || v > hi {
			return 0, fmt.Errorf("source.%s: must be between %d and %d, got %d", field, lo, hi, v)
		}
		return v, nil
	}
	var s *scenario.Scenario
	switch {
	case src.File != "" && src.Family != "":
		return nil, errors.New("source: give file or family, not both")
	case src.File != "":
		loaded, err := scenario.Load(src.File)
		if err != nil {
			return nil, err
		}
		if src.Seed != nil {
			loaded.Seed = *src.Seed
		}
		return loaded, nil
	case src.Family == "random":
		w, err := count(src.Workloads, 8, 1, 1000, "workloads")
		if err != nil {
			return nil, err
		}
		s = generate.Random(seed(1), w)
	case src.Family == "hetero":
		w, err := count(src.Workloads, 8, 1, 1000, "workloads")
		if err != nil {
			return nil, err
		}
		s = generate.Heterogeneous(seed(1), w)
	case src.Family == "large":
		w, err := count(src.Workloads, 200, 1, 10000, "workloads")
		if err != nil {
			return nil, err
		}
		n, err := count(src.Stores, 20, 2, 500, "stores")
		if err != nil {
			return nil, err
		}
		s = generate.LargePod(seed(1), n, w)
	case src.Family == "":
		return nil, errors.New("source: needs file or family")
	default:
		return nil, fmt.Errorf("source.family: must be random, hetero or large, got %q", src.Family)
	}
	if problems := scenario.Validate(s); len(problems) > 0 {
		return nil, &scenario.Error{Source: s.Name, Problems: problems}
	}
	return s, nil
}

// diskRef is a virtual disk of the scenario: where the VM runs, where the scenario put the disk.
type diskRef struct {
	id       string // "vm/unit"
	vm, unit string
	host     string
	home     string
	sizeGB   float64
	movable  bool // has a workload and lives in the pod
	vmIndex  int
	dskIndex int
}

// lab is a loaded scenario with its pod, its disks and the cache of per-datastore truths.
type lab struct {
	s       *scenario.Scenario
	pod     string
	stores  []string // the pod's datastores, scenario order
	storeAt map[string]int
	disks   []diskRef
	diskAt  map[string]int
	movable []int // indices into disks
	cache   map[string][]storeTruth
}

func newLab(req *request) (*lab, error) {
	s, err := load(req.Source)
	if err != nil {
		return nil, err
	}
	l := &lab{s: s, storeAt: map[string]int{}, diskAt: map[string]int{}, cache: map[string][]storeTruth{}}
	pods := map[string]bool{}
	for _, ds := range s.Datastores {
		if ds.Pod != "" {
			pods[ds.Pod] = true
		}
	}
	switch {
	case req.Pod != "":
		if !pods[req.Pod] {
			return nil, fmt.Errorf("pod: the scenario has no datastore cluster %q", req.Pod)
		}
		l.pod = req.Pod
	case len(pods) == 1:
		for p := range pods {
			l.pod = p
		}
	default:
		return nil, fmt.Errorf("pod: the scenario has %d datastore clusters; name one", len(pods))
	}
	for _, ds := range s.Datastores {
		if ds.Pod == l.pod {
			l.storeAt[ds.Name] = len(l.stores)
			l.stores = append(l.stores, ds.Name)
		}
	}
	for vi, vm := range s.VMs {
		for di, d := range vm.Disks {
			_, inPod := l.storeAt[d.Datastore]
			ref := diskRef{
				id: vm.Name + "/" + d.Unit, vm: vm.Name, unit: d.Unit, host: vm.Host, home: d.Datastore,
				sizeGB: d.SizeGB, movable: inPod && d.Workload != nil, vmIndex: vi, dskIndex: di,
			}
			l.diskAt[ref.id] = len(l.disks)
			if ref.movable {
				l.movable = append(l.movable, len(l.disks))
			}
			l.disks = append(l.disks, ref)
		}
	}
	return l, nil
}

// window checks and returns the request's interval window.
func window(req *request) (span, error) {
	var problems []error
	if req.Intervals < 1 || req.Intervals > 100000 {
		problems = append(problems, fmt.Errorf("intervals: must be between 1 and 100000, got %d", req.Intervals))
	}
	if req.Warmup < 0 {
		problems = append(problems, fmt.Errorf("warmup: must be zero or more, got %d", req.Warmup))
	}
	if req.Start < 0 {
		problems = append(problems, fmt.Errorf("start: must be zero or more, got %d", req.Start))
	}
	if len(problems) > 0 {
		return span{}, errors.Join(problems...)
	}
	return span{first: max(1, req.Start-req.Warmup+1), report: req.Start + 1, last: req.Start + req.Intervals}, nil
}

// resolve turns a placement (disks that moved) into every movable disk's datastore, checking it.
func (l *lab) resolve(p map[string]string, path string) ([]string, error) {
	where := make([]string, len(l.disks))
	for i, d := range l.disks {
		where[i] = d.home
	}
	ids := make([]string, 0, len(p))
	for id := range p {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var problems []error
	for _, id := range ids {
		ds := p[id]
		i, ok := l.diskAt[id]
		switch {
		case !ok:
			problems = append(problems, fmt.Errorf("%s[%q]: no such disk", path, id))
		case !l.disks[i].movable:
			problems = append(problems, fmt.Errorf("%s[%q]: the disk is not an active disk of pod %q", path, id, l.pod))
		default:
			if _, inPod := l.storeAt[ds]; !inPod {
				problems = append(problems, fmt.Errorf("%s[%q]: %q is not a datastore of pod %q", path, id, ds, l.pod))
				continue
			}
			if !l.visible(l.disks[i].host, ds) {
				problems = append(problems, fmt.Errorf("%s[%q]: host %s does not mount %q", path, id, l.disks[i].host, ds))
				continue
			}
			where[i] = ds
		}
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return where, nil
}

func (l *lab) visible(host, ds string) bool {
	for _, d := range l.s.Datastores {
		if d.Name == ds {
			for _, h := range d.Hosts {
				if h == host {
					return true
				}
			}
			return false
		}
	}
	return false
}

// storeTruth is one datastore's noise-free figures in one interval (pod disks only).
type storeTruth struct {
	iops, readIOPS       float64
	latSum, readLatSum   float64 // Σ IOPS × latency
	oio                  float64
	diskIOPS, diskLatSum map[string]float64
}

// storeTruths returns a datastore's truth per reported interval with the given disks on it,
// computed once per set of disks: a model of that datastore alone (the physics solves datastores
// independently, so this is exactly what the whole scenario would give).
func (l *lab) storeTruths(ds string, disks []int, w span) ([]storeTruth, error) {
	sorted := append([]int(nil), disks...)
	sort.Ints(sorted)
	var key strings.Builder
	fmt.Fprintf(&key, "%s|%d|%d|%d|", ds, w.first, w.report, w.last)
	for _, i := range sorted {
		fmt.Fprintf(&key, "%d,", i)
	}
	if got, ok := l.cache[key.String()]; ok {
		return got, nil
	}
	sub := *l.s
	sub.Datastores = nil
	for _, d := range l.s.Datastores {
		if d.Name == ds {
			sub.Datastores = append(sub.Datastores, d)
		}
	}
	byVM := map[int][]scenario.Disk{}
	for _, i := range sorted {
		ref := l.disks[i]
		d := l.s.VMs[ref.vmIndex].Disks[ref.dskIndex]
		d.Datastore = ds
		byVM[ref.vmIndex] = append(byVM[ref.vmIndex], d)
	}
	sub.VMs = nil
	for vi, vm := range l.s.VMs {
		if vd, ok := byVM[vi]; ok {
			vm.Disks = vd
			sub.VMs = append(sub.VMs, vm)
		}
	}
	m, err := physics.New(&sub)
	if err != nil {
		return nil, err
	}
	m.SetStart(t0)
	where := make([]string, len(l.disks))
	for _, i := range sorted {
		where[i] = ds
	}
	out := make([]storeTruth, 0, w.last-w.report+1)
	for k := w.first; k <= w.last; k++ {
		iv := m.Step(intervalEnd(k), step)
		if k >= w.report {
			out = append(out, l.truthOf(iv, where)[ds])
		}
	}
	l.cache[key.String()] = out
	return out, nil
}

// intervalEnd is when interval k (1-based) ends.
func intervalEnd(k int) time.Time { return t0.Add(time.Duration(k) * step) }

// span is the intervals a request simulates (first … last) and reports (report … last).
type span struct{ first, report, last int }

// truthOf sums an interval's true figures of the movable disks per datastore; where[i] is disk
// i's datastore ("" for disks not in the model).
func (l *lab) truthOf(iv *physics.Interval, where []string) map[string]storeTruth {
	out := map[string]storeTruth{}
	for _, i := range l.movable {
		ds := where[i]
		if ds == "" {
			continue
		}
		ref := l.disks[i]
		st, ok := iv.Disks[physics.DiskKey{VM: ref.vm, Unit: ref.unit}]
		if !ok {
			continue
		}
		t := out[ds]
		if t.diskIOPS == nil {
			t.diskIOPS, t.diskLatSum = map[string]float64{}, map[string]float64{}
		}
		m := st.True
		iops := m.ReadIOPS + m.WriteIOPS
		lat := m.ReadIOPS*m.ReadLatencyMs + m.WriteIOPS*m.WriteLatencyMs
		t.iops += iops
		t.readIOPS += m.ReadIOPS
		t.latSum += lat
		t.readLatSum += m.ReadIOPS * m.ReadLatencyMs
		t.oio += m.ReadOIO + m.WriteOIO
		t.diskIOPS[ref.id] += iops
		t.diskLatSum[ref.id] += lat
		out[ds] = t
	}
	return out
}

// summarise averages per-datastore truths over the reported intervals into a placement's truth.
func (l *lab) summarise(per map[string][]storeTruth, where []string) placementTruth {
	pt := placementTruth{Datastores: map[string]storeSummary{}, Disks: map[string]diskSummary{}}
	latSum := 0.0
	counts := map[string]int{}
	for _, i := range l.movable {
		counts[where[i]]++
	}
	for _, ds := range l.stores {
		ts := per[ds]
		var s storeSummary
		var lat, rlat float64
		for _, t := range ts {
			s.IOPS += t.iops
			s.ReadIOPS += t.readIOPS
			s.OIO += t.oio
			lat += t.latSum
			rlat += t.readLatSum
		}
		n := float64(max(1, len(ts)))
		s.LatencyMs, s.ReadLatencyMs = safeDiv(lat, s.IOPS), safeDiv(rlat, s.ReadIOPS)
		s.IOPS, s.ReadIOPS, s.OIO = s.IOPS/n, s.ReadIOPS/n, s.OIO/n
		s.Disks = counts[ds]
		pt.Datastores[ds] = s
		pt.TotalIOPS += s.IOPS
		latSum += lat / n
	}
	pt.AvgLatencyMs = safeDiv(latSum, pt.TotalIOPS)
	for _, i := range l.movable {
		id, ds := l.disks[i].id, where[i]
		var iops, lat float64
		for _, t := range per[ds] {
			iops += t.diskIOPS[id]
			lat += t.diskLatSum[id]
		}
		pt.Disks[id] = diskSummary{Datastore: ds, IOPS: iops / float64(max(1, len(per[ds]))), LatencyMs: safeDiv(lat, iops)}
	}
	return pt
}

// truth is a placement's ground truth, from the per-datastore cache.
func (l *lab) truth(where []string, w span) (placementTruth, error) {
	on := map[string][]int{}
	for _, i := range l.movable {
		on[where[i]] = append(on[where[i]], i)
	}
	per := map[string][]storeTruth{}
	for _, ds := range l.stores {
		ts, err := l.storeTruths(ds, on[ds], w)
		if err != nil {
			return placementTruth{}, err
		}
		per[ds] = ts
	}
	return l.summarise(per, where), nil
}

// placementTruth averages a placement's truth over the window.
type placementTruth struct {
	TotalIOPS    float64                 `json:"total_iops"`
	AvgLatencyMs float64                 `json:"avg_latency_ms"`
	Datastores   map[string]storeSummary `json:"datastores"`
	Disks        map[string]diskSummary  `json:"disks"`
	Placement    map[string]string       `json:"placement,omitempty"`
}

type storeSummary struct {
	IOPS          float64 `json:"iops"`
	LatencyMs     float64 `json:"latency_ms"`
	ReadIOPS      float64 `json:"read_iops"`
	ReadLatencyMs float64 `json:"read_latency_ms"`
	OIO           float64 `json:"oio"`
	Disks         int     `json:"disks"`
}

type diskSummary struct {
	Datastore string  `json:"datastore"`
	IOPS      float64 `json:"iops"`
	LatencyMs float64 `json:"latency_ms"`
}

func safeDiv(a, b float64) float64 {
	if b == 0 || math.IsNaN(b) {
		return 0
	}
	return a / b
}
