package generate

import (
	"bytes"
	"os"
	"testing"

	"github.com/basil-project/basil/lab/internal/scenario"
)

// The committed scenarios/large.yaml is exactly what `scenario-gen large --seed 2010` writes.
func TestCommittedLargeScenarioIsGenerated(t *testing.T) {
	want, err := Marshal(Large(LargeSeed))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../scenarios/large.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("scenarios/large.yaml differs from the generator's output; regenerate it with: go run ./cmd/scenario-gen large --out scenarios/large.yaml")
	}
}

func TestLargeShape(t *testing.T) {
	data, err := Marshal(Large(LargeSeed))
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Parse(data, "large")
	if err != nil {
		t.Fatal(err)
	}
	disks, pods, kinds, sioc, tagged := 0, map[string]bool{}, map[string]bool{}, 0, 0
	for _, v := range s.VMs {
		disks += len(v.Disks)
		if len(v.Tags) > 0 {
			tagged++
		}
	}
	for _, d := range s.Datastores {
		if d.Pod != "" {
			pods[d.Pod] = true
		}
		kinds[d.Device.Kind] = true
		if d.SIOC.Enabled {
			sioc++
		}
	}
	if len(s.Hosts) != 64 || len(s.VMs) != 2000 || disks != 6000 || len(s.Datastores) != 50 {
		t.Errorf("shape: %d hosts, %d VMs, %d disks, %d datastores", len(s.Hosts), len(s.VMs), disks, len(s.Datastores))
	}
	if len(pods) < 3 || len(kinds) < 4 || sioc == 0 || tagged < 1000 {
		t.Errorf("variety: %d pods, kinds %v, %d SIOC datastores, %d tagged VMs", len(pods), kinds, sioc, tagged)
	}
}

// Random configurations are valid, repeatable for a seed and vary with it.
func TestRandomConfigurations(t *testing.T) {
	placements := map[string]bool{}
	for seed := int64(1); seed <= 30; seed++ {
		a, err := Marshal(Random(seed, 8))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Marshal(Random(seed, 8))
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: two runs differ", seed)
		}
		s, err := scenario.Parse(a, "random")
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(s.VMs) != 8 {
			t.Fatalf("seed %d: %d VMs", seed, len(s.VMs))
		}
		key := ""
		for _, v := range s.VMs {
			if len(v.Disks) != 2 || v.Disks[0].SizeGB != 15 || v.Disks[1].SizeGB != 10 || v.Disks[1].Workload == nil {
				t.Fatalf("seed %d: VM %s should have a 15 GB OS disk and a 10 GB workload disk", seed, v.Name)
			}
			key += v.Name + "@" + v.Disks[1].Datastore + " "
		}
		placements[key] = true
	}
	if len(placements) < 25 {
		t.Errorf("only %d distinct configurations in 30 seeds", len(placements))
	}
}
