package vc

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

func TestTraceFollowsTheDisksSolvedIntervals(t *testing.T) {
	tl := newTestLab(t, testScenario)
	if _, err := tl.WriteTrace(&bytes.Buffer{}, "vm-1", "scsi0:1", 3, "spc", 1); err == nil {
		t.Fatal("a trace before any solved interval must be an error")
	}
	if _, err := tl.StepIntervals(6); err != nil {
		t.Fatal(err)
	}
	truth, err := tl.GroundTruth(6)
	if err != nil {
		t.Fatal(err)
	}
	var want DiskTruth
	for _, d := range truth.Disks {
		if d.VM == "vm-1" && d.Unit == "scsi0:1" {
			want = d
		}
	}
	var out bytes.Buffer
	n, err := tl.WriteTrace(&out, "vm-1", "scsi0:1", 6, "spc", 7)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines, %d requests", len(lines), n)
	}
	span := 6 * IntervalLength.Seconds()
	expected := (want.ReadIOPS + want.WriteIOPS) * span
	// Batched Poisson arrivals: the count is random, within a few standard deviations of the mean.
	if rel := (float64(n) - expected) / expected; rel < -0.1 || rel > 0.1 {
		t.Fatalf("%d requests, the truth says %.0f over %.0f s", n, expected, span)
	}
	reads, last := 0, -1.0
	for i, line := range lines {
		f := strings.Split(line, ",")
		if len(f) != 5 || f[0] != "0" || (f[3] != "R" && f[3] != "W") || f[2] != "8192" {
			t.Fatalf("line %d: %q is not ASU,LBA,8 KB,R|W,time", i+1, line)
		}
		at, err := strconv.ParseFloat(f[4], 64)
		if err != nil || at < last || at > span {
			t.Fatalf("line %d: time %q not in order within [0, %g]", i+1, f[4], span)
		}
		last = at
		if f[3] == "R" {
			reads++
		}
	}
	if share := float64(reads) / float64(n); share < 0.65 || share > 0.75 {
		t.Fatalf("read share %.2f, the workload reads 70 %%", share)
	}
	var again bytes.Buffer
	if _, err := tl.WriteTrace(&again, "vm-1", "scsi0:1", 6, "spc", 7); err != nil || again.String() != out.String() {
		t.Fatal("the same disk, intervals and seed must give the same trace")
	}
	var csv bytes.Buffer
	if _, err := tl.WriteTrace(&csv, "vm-1", "scsi0:1", 1, "csv", 7); err != nil {
		t.Fatal(err)
	}
	if f := strings.Split(strings.SplitN(csv.String(), "\n", 2)[0], ","); len(f) != 3 {
		t.Fatalf("csv line %q is not time,size,op", f)
	}
	for _, bad := range []struct {
		vm, unit, format string
		n                int
	}{{"vm-9", "scsi0:1", "spc", 1}, {"vm-1", "scsi0:1", "xml", 1}, {"vm-1", "scsi0:1", "spc", 0}, {"vm-1", "scsi0:1", "spc", HistoryIntervals + 1}} {
		if _, _, err := tl.CheckTrace(bad.vm, bad.unit, bad.n, bad.format); err == nil {
			t.Fatalf("%+v must be refused", bad)
		}
	}
}
