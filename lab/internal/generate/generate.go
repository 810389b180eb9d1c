// Package generate builds lab scenarios from a seed: random BASIL testbeds in the style of the
// paper's §6.4 (eight random Table 1 workloads placed at random on three LUNs) and the large
// datacenter used for scale tests. The same seed always yields the same scenario, byte for byte.
package generate

import (
	"bytes"
	"fmt"
	"math/rand/v2"

	"gopkg.in/yaml.v3"

	"github.com/basil-project/basil/lab/internal/scenario"
)

// IometerType is one of the workload definitions of BASIL's Table 1.
type IometerType struct {
	Name             string
	MinOIO, MaxOIO   float64
	IOSizeKB         float64
	ReadPct, RandPct float64
}

// Table1 are BASIL's Iometer workload configurations (Table 1 of the paper).
var Table1 = []IometerType{
	{Name: "workstation", MinOIO: 4, MaxOIO: 12, IOSizeKB: 8, ReadPct: 80, RandPct: 80},
	{Name: "exchange", MinOIO: 4, MaxOIO: 16, IOSizeKB: 4, ReadPct: 67, RandPct: 100},
	{Name: "oltp", MinOIO: 12, MaxOIO: 16, IOSizeKB: 8, ReadPct: 70, RandPct: 100},
	{Name: "webserver", MinOIO: 1, MaxOIO: 4, IOSizeKB: 4, ReadPct: 95, RandPct: 75},
}

// Workload returns the type's workload: outstanding IOs drawn uniformly in its range every 20 s.
func (t IometerType) Workload() *scenario.Workload {
	return &scenario.Workload{
		OIO:      scenario.OIO{Min: t.MinOIO, Max: t.MaxOIO},
		IOSizeKB: t.IOSizeKB, ReadPct: t.ReadPct, RandomPct: t.RandPct,
	}
}

// TestbedLUNs are the three FC datastores of the BASIL testbed (§6.1).
var TestbedLUNs = []scenario.Datastore{
	testbedLUN("3diskLUN", 3), testbedLUN("6diskLUN", 6), testbedLUN("9diskLUN", 9),
}

func testbedLUN(name string, disks int) scenario.Datastore {
	return scenario.Datastore{
		Name: name, CapacityGB: 150, Pod: "basil-pod", Tags: []scenario.Tag{{Category: "basil-tier", Name: "fc"}},
		Device: scenario.Device{Kind: scenario.KindFC15k, Disks: disks, RAID: "0", CacheMB: 1024},
	}
}

// osLUN holds the VMs' OS disks, outside the datastore cluster.
func osLUN() scenario.Datastore {
	return scenario.Datastore{
		Name: "os-lun", CapacityGB: 500,
		Device: scenario.Device{Kind: scenario.KindFC15k, Disks: 5, RAID: "5", CacheMB: 512},
	}
}

// Random returns a §6.4-style configuration: `workloads` workloads drawn at random from Table 1,
// each in its own VM (a 15 GB OS disk on the OS LUN and a 10 GB experimental disk) on one of two
// hosts, the experimental disks placed at random on the 3-, 6- and 9-disk LUNs.
func Random(seed int64, workloads int) *scenario.Scenario {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6261_7369_6c36_2e34)) // "basil6.4"
	s := &scenario.Scenario{
		Name:        fmt.Sprintf("basil-random-%d", seed),
		Description: fmt.Sprintf("BASIL §6.4-style random configuration (seed %d): %d random Table 1 workloads placed at random on the 3-, 6- and 9-disk FC LUNs.", seed, workloads),
		Seed:        seed,
		Clusters:    []scenario.Cluster{{Name: "basil-cluster", Hosts: []string{"esx-01", "esx-02"}}},
		Datastores:  append(append([]scenario.Datastore(nil), TestbedLUNs...), osLUN()),
	}
	count := map[string]int{}
	for i := 0; i < workloads; i++ {
		t := Table1[rng.IntN(len(Table1))]
		ds := TestbedLUNs[rng.IntN(len(TestbedLUNs))].Name
		count[t.Name]++
		s.VMs = append(s.VMs, scenario.VM{
			Name: fmt.Sprintf("%s-%d", t.Name, count[t.Name]),
			Host: fmt.Sprintf("esx-%02d", 1+i%2),
			Tags: []scenario.Tag{{Category: "workload", Name: t.Name}},
			Disks: []scenario.Disk{
				{Unit: "scsi0:0", SizeGB: 15, Datastore: "os-lun"},
				{Unit: "scsi0:1", SizeGB: 10, Datastore: ds, Workload: t.Workload()},
			},
		})
	}
	return s
}

// Marshal writes a scenario as YAML: block style for the structure, one line per disk, device
// and SIOC setting, so large scenarios stay readable.
func Marshal(s *scenario.Scenario) ([]byte, error) {
	var root yaml.Node
	if err := root.Encode(s); err != nil {
		return nil, err
	}
	compact(&root, "")
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// compact puts the mappings of disks, devices, SIOC settings and tag lists in flow style.
func compact(n *yaml.Node, key string) {
	switch key {
	case "device", "sioc", "tags", "hosts", "io":
		n.Style = yaml.FlowStyle
		return
	case "disks":
		if n.Kind == yaml.SequenceNode {
			for _, d := range n.Content {
				d.Style = yaml.FlowStyle
			}
			return
		}
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			compact(n.Content[i+1], n.Content[i].Value)
		}
		return
	}
	for _, c := range n.Content {
		compact(c, "")
	}
}
