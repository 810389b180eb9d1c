package generate

import (
	"bytes"
	"testing"

	"github.com/basil-project/basil/lab/internal/scenario"
)

// The evaluation families are valid, repeatable, vary with the seed and have the shape they claim.
func TestEvaluationFamilies(t *testing.T) {
	cases := []struct {
		name     string
		gen      func(seed int64) *scenario.Scenario
		minKinds int
		disks    int
	}{
		{"hetero", func(seed int64) *scenario.Scenario { return Heterogeneous(seed, 8) }, 3, 8},
		{"large", func(seed int64) *scenario.Scenario { return LargePod(seed, 20, 200) }, 3, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var previous []byte
			for seed := int64(1); seed <= 5; seed++ {
				data, err := Marshal(tc.gen(seed))
				if err != nil {
					t.Fatal(err)
				}
				again, err := Marshal(tc.gen(seed))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(data, again) {
					t.Fatalf("seed %d: two different scenarios", seed)
				}
				if bytes.Equal(data, previous) {
					t.Fatalf("seed %d gives the same scenario as seed %d", seed, seed-1)
				}
				previous = data
				s, err := scenario.Parse(data, tc.name)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				kinds := map[string]bool{}
				maintenance := map[string]bool{}
				for _, ds := range s.Datastores {
					maintenance[ds.Name] = ds.Maintenance
					kinds[ds.Device.Kind] = true
					if ds.Pod != EvalPod {
						t.Errorf("seed %d: %s is outside the pod", seed, ds.Name)
					}
				}
				if len(kinds) < tc.minKinds {
					t.Errorf("seed %d: %d device kinds, want at least %d", seed, len(kinds), tc.minKinds)
				}
				used := map[string]float64{}
				disks, streams := 0, 0
				for _, vm := range s.VMs {
					for _, d := range vm.Disks {
						disks++
						used[d.Datastore] += d.SizeGB
						if maintenance[d.Datastore] {
							t.Errorf("seed %d: %s/%s placed on %s, in maintenance", seed, vm.Name, d.Unit, d.Datastore)
						}
						if d.Workload != nil && (d.Workload.RandomPct <= 20 || d.Workload.IOSizeKB >= 64) {
							streams++
						}
					}
				}
				if disks != tc.disks || streams == 0 {
					t.Errorf("seed %d: %d disks (%d streams), want %d with some streams", seed, disks, streams, tc.disks)
				}
				for _, ds := range s.Datastores {
					if used[ds.Name] > 0.9*ds.CapacityGB {
						t.Errorf("seed %d: %s holds %.0f of %.0f GB", seed, ds.Name, used[ds.Name], ds.CapacityGB)
					}
				}
			}
		})
	}
}

// The heterogeneous family always has flash, FC RAID 5 and SATA RAID 6.
func TestHeterogeneousTiers(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		s := Heterogeneous(seed, 8)
		has := map[string]bool{}
		for _, ds := range s.Datastores {
			has[ds.Device.Kind+"/"+ds.Device.RAID] = true
		}
		for _, want := range []string{"ssd/5", "fc15k/5", "sata7k/6"} {
			if !has[want] {
				t.Errorf("seed %d: no %s datastore", seed, want)
			}
		}
	}
}
