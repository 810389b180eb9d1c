package generate

import (
	"fmt"
	"math/rand/v2"

	"github.com/basil-project/basil/lab/internal/scenario"
)

// EvalPod is the datastore cluster of the evaluation families.
const EvalPod = "eval-pod"

// tierKind is a device kind the heterogeneous families draw datastores from.
type tierKind struct {
	name               string
	kind               string
	raid               string
	minDisks, maxDisks int
	minGB, maxGB       int
}

// Flash, FC RAID 5 and SATA RAID 6 (always present), and the extra kinds a fourth or later
// datastore may be.
var (
	tierSSD    = tierKind{"ssd", scenario.KindSSD, "5", 4, 6, 300, 500}
	tierFC     = tierKind{"fc", scenario.KindFC15k, "5", 5, 8, 400, 800}
	tierSATA   = tierKind{"sata", scenario.KindSATA7k, "6", 6, 10, 800, 1500}
	extraTiers = []tierKind{
		{"fc10", scenario.KindFC15k, "10", 4, 8, 400, 800},
		{"sas", scenario.KindSAS10k, "5", 5, 8, 500, 900},
		tierSATA, tierFC,
	}
)

// streamType is a sequential or write-heavy workload beyond Table 1.
type streamType struct {
	name string
	wl   func(r *rand.Rand) *scenario.Workload
}

var streamTypes = []streamType{
	{"backup", func(r *rand.Rand) *scenario.Workload { // sequential 64 KB reads
		return &scenario.Workload{OIO: scenario.OIO{Min: 2, Max: float64(4 + r.IntN(5))}, IOSizeKB: 64, ReadPct: 100, RandomPct: 2}
	}},
	{"log", func(r *rand.Rand) *scenario.Workload { // database log: small sequential writes
		return &scenario.Workload{OIO: scenario.OIO{Min: 1, Max: float64(2 + r.IntN(3))}, IOSizeKB: 16, ReadPct: 2, RandomPct: 5}
	}},
	{"dss", func(r *rand.Rand) *scenario.Workload { // decision support: large, mostly sequential reads
		return &scenario.Workload{OIO: scenario.OIO{Min: 4, Max: float64(8 + r.IntN(9))}, IOSizeKB: 64, ReadPct: 90, RandomPct: 20}
	}},
	{"ingest", func(r *rand.Rand) *scenario.Workload { // bulk load: large sequential writes
		return &scenario.Workload{OIO: scenario.OIO{Min: 2, Max: float64(4 + r.IntN(5))}, IOSizeKB: 128, ReadPct: 5, RandomPct: 5}
	}},
}

func tierStore(r *rand.Rand, name string, t tierKind, hosts []string) scenario.Datastore {
	return scenario.Datastore{
		Name: name, CapacityGB: float64(t.minGB + 50*r.IntN((t.maxGB-t.minGB)/50+1)), Pod: EvalPod, Hosts: hosts,
		Tags:   []scenario.Tag{{Category: "basil-tier", Name: t.name}},
		Device: scenario.Device{Kind: t.kind, Disks: t.minDisks + r.IntN(t.maxDisks-t.minDisks+1), RAID: t.raid, CacheMB: 512},
	}
}

// placeAtRandom puts each data disk on a random datastore of the pod that its VM's host mounts
// and that has room for it (every generated pod has room for all disks on its largest store).
func placeAtRandom(r *rand.Rand, s *scenario.Scenario) {
	used := map[string]float64{}
	for i := range s.VMs {
		vm := &s.VMs[i]
		for j := range vm.Disks {
			d := &vm.Disks[j]
			if d.Workload == nil {
				continue
			}
			var fits []string
			for _, ds := range s.Datastores {
				if ds.Pod == EvalPod && !ds.Maintenance && mounts(ds, vm.Host) && used[ds.Name]+d.SizeGB <= 0.9*ds.CapacityGB {
					fits = append(fits, ds.Name)
				}
			}
			d.Datastore = fits[r.IntN(len(fits))]
			used[d.Datastore] += d.SizeGB
		}
	}
}

func mounts(ds scenario.Datastore, host string) bool {
	if len(ds.Hosts) == 0 {
		return true
	}
	for _, h := range ds.Hosts {
		if h == host {
			return true
		}
	}
	return false
}

// Heterogeneous returns a small mixed-tier pod: an SSD RAID 5, an FC RAID 5 and a SATA RAID 6
// datastore (and one more of a random kind half the time), three hosts, and `workloads` VMs of
// one data disk each: Table 1 workloads and two or three sequential or write-heavy streams
// (backup, log, DSS, ingest), placed at random.
func Heterogeneous(seed int64, workloads int) *scenario.Scenario {
	r := rand.New(rand.NewPCG(uint64(seed), 0x6865_7465_726f_6765)) // "heteroge"
	hosts := []string{"esx-01", "esx-02", "esx-03"}
	s := &scenario.Scenario{
		Name:        fmt.Sprintf("hetero-%d", seed),
		Description: fmt.Sprintf("Heterogeneous pod (seed %d): SSD, FC RAID 5 and SATA RAID 6 datastores; Table 1 workloads and sequential streams placed at random.", seed),
		Seed:        seed,
		Clusters:    []scenario.Cluster{{Name: "eval-cluster", Hosts: hosts}},
		Datastores: []scenario.Datastore{
			tierStore(r, "ssd-1", tierSSD, nil), tierStore(r, "fc-1", tierFC, nil), tierStore(r, "sata-1", tierSATA, nil),
		},
	}
	if r.IntN(2) == 0 {
		t := extraTiers[r.IntN(len(extraTiers))]
		s.Datastores = append(s.Datastores, tierStore(r, t.name+"-2", t, nil))
	}
	streams := 2 + r.IntN(2)
	count := map[string]int{}
	for i := range workloads {
		var name string
		var wl *scenario.Workload
		if i < streams {
			st := streamTypes[r.IntN(len(streamTypes))]
			name, wl = st.name, st.wl(r)
		} else {
			t := Table1[r.IntN(len(Table1))]
			name, wl = t.Name, t.Workload()
		}
		count[name]++
		s.VMs = append(s.VMs, scenario.VM{
			Name: fmt.Sprintf("%s-%d", name, count[name]), Host: hosts[i%len(hosts)],
			Tags:  []scenario.Tag{{Category: "workload", Name: name}},
			Disks: []scenario.Disk{{Unit: "scsi0:1", SizeGB: float64(10 * (1 + r.IntN(6))), Workload: wl}},
		})
	}
	placeAtRandom(r, s)
	return s
}

// LargePod returns a large random pod: `stores` datastores of mixed kinds (some mounted by only
// some of the four hosts, one in maintenance and empty), `workloads` VMs of one data disk each (Table 1 workloads at a random
// intensity, one in eight a stream), placed at random.
func LargePod(seed int64, stores, workloads int) *scenario.Scenario {
	r := rand.New(rand.NewPCG(uint64(seed), 0x6c61_7267_6570_6f64)) // "largepod"
	hosts := []string{"esx-01", "esx-02", "esx-03", "esx-04"}
	s := &scenario.Scenario{
		Name:        fmt.Sprintf("large-pod-%d", seed),
		Description: fmt.Sprintf("Large random pod (seed %d): %d mixed datastores, %d disks placed at random.", seed, stores, workloads),
		Seed:        seed,
		Clusters:    []scenario.Cluster{{Name: "eval-cluster", Hosts: hosts}},
	}
	kinds := append([]tierKind{tierSSD, tierFC, tierSATA}, extraTiers...)
	for i := range stores {
		var mounted []string
		if i%5 == 4 { // one datastore in five is seen by three hosts only
			mounted = append(mounted, hosts[:3]...)
		}
		t := kinds[r.IntN(len(kinds))]
		s.Datastores = append(s.Datastores, tierStore(r, fmt.Sprintf("%s-%02d", t.name, i+1), t, mounted))
	}
	s.Datastores[stores/2].Maintenance = true
	count := map[string]int{}
	for i := range workloads {
		var name string
		var wl *scenario.Workload
		if r.IntN(8) == 0 {
			st := streamTypes[r.IntN(len(streamTypes))]
			name, wl = st.name, st.wl(r)
		} else {
			t := Table1[r.IntN(len(Table1))]
			name, wl = t.Name, t.Workload()
			scale := []float64{0.25, 0.5, 1}[r.IntN(3)]
			wl.OIO.Min, wl.OIO.Max = max(0.25, wl.OIO.Min*scale), wl.OIO.Max*scale
		}
		count[name]++
		s.VMs = append(s.VMs, scenario.VM{
			Name: fmt.Sprintf("%s-%d", name, count[name]), Host: hosts[i%len(hosts)],
			Tags:  []scenario.Tag{{Category: "workload", Name: name}},
			Disks: []scenario.Disk{{Unit: "scsi0:1", SizeGB: float64(10 * (1 + r.IntN(6))), Workload: wl}},
		})
	}
	placeAtRandom(r, s)
	return s
}
