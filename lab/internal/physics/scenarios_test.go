package physics

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/basil-project/basil/lab/internal/scenario"
)

// Every committed scenario loads, has a datastore cluster, runs, and keeps Little's law.
func TestCommittedScenarios(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("scenarios: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := scenario.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			pods := 0
			for _, d := range s.Datastores {
				if d.Pod != "" {
					pods++
				}
			}
			if pods < 3 {
				t.Errorf("only %d datastores in a datastore cluster", pods)
			}
			m, err := New(s)
			if err != nil {
				t.Fatal(err)
			}
			iv := steady(m, 3)
			if iv.TotalIOPS <= 0 || iv.AvgLatencyMs <= 0 {
				t.Fatalf("no IO: %.0f IOPS, %.2f ms", iv.TotalIOPS, iv.AvgLatencyMs)
			}
			for k, d := range iv.Disks {
				tr := d.True
				if oio := tr.ReadOIO + tr.WriteOIO; oio > 0 {
					if got := (tr.ReadIOPS*tr.ReadLatencyMs + tr.WriteIOPS*tr.WriteLatencyMs) / 1000; math.Abs(got-oio) > 1e-6*oio {
						t.Fatalf("%v: IOPS x latency %.6f != OIO %.6f", k, got, oio)
					}
				}
			}
		})
	}
}
