package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func call[T any](t *testing.T, command string, req map[string]any) T {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{command}, bytes.NewReader(body), &out); err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	var answer T
	if err := json.Unmarshal(out.Bytes(), &answer); err != nil {
		t.Fatal(err)
	}
	return answer
}

var sources = []struct {
	name   string
	source map[string]any
}{
	{"basil-6.2", map[string]any{"file": "../../scenarios/basil-6.2.yaml", "seed": 5}},
	{"random", map[string]any{"family": "random", "seed": 4}},
	{"hetero", map[string]any{"family": "hetero", "seed": 2, "workloads": 6}},
	{"large", map[string]any{"family": "large", "seed": 1, "stores": 6, "workloads": 30}},
}

// A placement's truth from per-datastore models (score) is the whole scenario's truth (measure):
// the decomposition exhaustive search relies on.
func TestScoreMatchesMeasure(t *testing.T) {
	for _, tc := range sources {
		t.Run(tc.name, func(t *testing.T) {
			d := call[description](t, "describe", map[string]any{"source": tc.source})
			// Move the first disk to another datastore its host mounts, so a moved placement is checked too.
			placement := map[string]string{}
			for _, ds := range d.Datastores {
				if ds.Name != d.Disks[0].Datastore && contains(ds.Hosts, d.Disks[0].Host) {
					placement[d.Disks[0].ID] = ds.Name
					break
				}
			}
			req := map[string]any{"source": tc.source, "placement": placement, "start": 30, "warmup": 6, "intervals": 9}
			m := call[measurement](t, "measure", req)
			req["placements"] = []map[string]string{placement}
			delete(req, "placement")
			s := call[scores](t, "score", req)
			got, want := s.Placements[0], m.Truth
			if len(m.Intervals) != 9 {
				t.Fatalf("measure reported %d intervals, want 9", len(m.Intervals))
			}
			if want.TotalIOPS <= 0 || !approxEqual(got.TotalIOPS, want.TotalIOPS) || !approxEqual(got.AvgLatencyMs, want.AvgLatencyMs) {
				t.Fatalf("score %.6f IOPS %.6f ms, measure %.6f IOPS %.6f ms", got.TotalIOPS, got.AvgLatencyMs, want.TotalIOPS, want.AvgLatencyMs)
			}
			for name, ds := range want.Datastores {
				if !approxEqual(got.Datastores[name].IOPS, ds.IOPS) {
					t.Errorf("%s: score %.6f IOPS, measure %.6f", name, got.Datastores[name].IOPS, ds.IOPS)
				}
			}
		})
	}
}

func approxEqual(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// The exhaustive best beats every placement scored in the same window, fits the space rule and
// only uses datastores the disks' hosts mount.
func TestBestIsAtLeastEveryPlacement(t *testing.T) {
	for _, tc := range sources[:3] {
		t.Run(tc.name, func(t *testing.T) {
			d := call[description](t, "describe", map[string]any{"source": tc.source})
			window := map[string]any{"source": tc.source, "start": 30, "warmup": 6, "intervals": 6}
			b := call[bestAnswer](t, "best", merge(window, map[string]any{"headroom_pct": 10}))
			if b.Placements < 2 || b.Best.TotalIOPS < b.Worst.TotalIOPS {
				t.Fatalf("best %.1f, worst %.1f over %d placements", b.Best.TotalIOPS, b.Worst.TotalIOPS, b.Placements)
			}
			start := map[string]float64{}
			for _, disk := range d.Disks {
				start[disk.Datastore] += disk.SizeGB
			}
			room := func(info storeInfo) float64 { return math.Max(info.CapacityGB*0.9-info.FixedGB, start[info.Name]) }
			// The scenario's own placement, and every disk on each datastore in turn where allowed
			// and where they fit (the best is only the best of what fits).
			placements := []map[string]string{{}}
			for _, ds := range d.Datastores {
				p := map[string]string{}
				used := start[ds.Name]
				for _, disk := range d.Disks {
					if disk.Datastore != ds.Name && contains(ds.Hosts, disk.Host) && used+disk.SizeGB <= room(ds) {
						p[disk.ID] = ds.Name
						used += disk.SizeGB
					}
				}
				placements = append(placements, p)
			}
			s := call[scores](t, "score", merge(window, map[string]any{"placements": placements}))
			for i, p := range s.Placements {
				if p.TotalIOPS > b.Best.TotalIOPS*(1+1e-9) {
					t.Errorf("placement %d: %.3f IOPS above the best %.3f", i, p.TotalIOPS, b.Best.TotalIOPS)
				}
			}
			used := map[string]float64{}
			for _, disk := range d.Disks {
				ds := b.Best.Placement[disk.ID]
				used[ds] += disk.SizeGB
				for _, info := range d.Datastores {
					if info.Name == ds && !contains(info.Hosts, disk.Host) {
						t.Errorf("%s placed on %s, which host %s does not mount", disk.ID, ds, disk.Host)
					}
				}
			}
			for _, info := range d.Datastores {
				if used[info.Name] > room(info)+1e-6 {
					t.Errorf("%s holds %.0f GB, room %.0f GB", info.Name, used[info.Name], room(info))
				}
			}
		})
	}
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// vCenter's counters come as integers for the pod's datastores and active disks only.
func TestMeasureReportsCountersOfThePod(t *testing.T) {
	src := map[string]any{"file": "../../scenarios/basil-6.2.yaml"}
	m := call[measurement](t, "measure", map[string]any{"source": src, "start": 3, "warmup": 3, "intervals": 3})
	if len(m.Intervals) != 3 {
		t.Fatalf("%d intervals, want 3", len(m.Intervals))
	}
	iv := m.Intervals[0]
	if len(iv.Disks) != 8 {
		t.Errorf("%d disks, want the 8 experimental disks", len(iv.Disks))
	}
	if len(iv.Hosts) != 6 {
		t.Errorf("%d host-datastore samples, want 2 hosts x 3 LUNs", len(iv.Hosts))
	}
	readIOPS := int64(0)
	for _, h := range iv.Hosts {
		if h.Datastore == "os-lun" {
			t.Errorf("os-lun is outside the pod but was reported")
		}
		readIOPS += h.ReadIOPS
	}
	if readIOPS <= 0 || iv.Time != t0.Add(4*step).Unix() {
		t.Errorf("read IOPS %d, time %d", readIOPS, iv.Time)
	}
}

// SIOC shares set through a measure request are the lab's SIOC: on the contended 3-disk LUN, the
// disk given eight times the shares of its neighbours reads faster than with equal shares, and they
// slower (the SLO goal's priority groups rely on this).
func TestSharesFavourTheHighShareDisk(t *testing.T) {
	src := map[string]any{"file": "../../scenarios/basil-6.2.yaml", "seed": 5}
	latency := func(m measurement, id string) float64 {
		sum, iops := 0.0, 0.0
		for _, iv := range m.Intervals {
			for _, d := range iv.Disks {
				if d.ID == id {
					sum += float64(d.ReadIOPS * d.ReadLatencyUs)
					iops += float64(d.ReadIOPS)
				}
			}
		}
		return sum / iops
	}
	base := map[string]any{"source": src, "start": 30, "warmup": 9, "intervals": 30, "sioc_ms": map[string]any{"3diskLUN": 5}}
	equal := call[measurement](t, "measure", base)
	favoured := call[measurement](t, "measure", merge(base, map[string]any{"shares": map[string]any{
		"oltp-1/scsi0:1": 4000, "oltp-2/scsi0:1": 500, "workstation-1/scsi0:1": 500,
	}}))
	if a, b := latency(favoured, "oltp-1/scsi0:1"), latency(equal, "oltp-1/scsi0:1"); !(a < b) {
		t.Errorf("oltp-1 reads in %.0f µs with 8x the shares, %.0f µs with equal shares", a, b)
	}
	if a, b := latency(favoured, "oltp-2/scsi0:1"), latency(equal, "oltp-2/scsi0:1"); !(a > b) {
		t.Errorf("oltp-2 reads in %.0f µs with 1/8 the shares, %.0f µs with equal shares", a, b)
	}
}

func TestBadRequestsNameTheField(t *testing.T) {
	cases := []struct {
		name, command, body, want string
	}{
		{"unknown field", "measure", `{"source":{"family":"random"},"intervals":1,"oops":1}`, "oops"},
		{"no source", "describe", `{"source":{}}`, "source: needs file or family"},
		{"bad family", "describe", `{"source":{"family":"nope"}}`, "source.family"},
		{"bad workloads", "describe", `{"source":{"family":"hetero","workloads":0.5}}`, "workloads"},
		{"intervals", "measure", `{"source":{"family":"random"},"intervals":0}`, "intervals: must be between"},
		{"unknown disk", "measure", `{"source":{"family":"random"},"intervals":1,"placement":{"x/y":"3diskLUN"}}`, `placement["x/y"]: no such disk`},
		{"outside the pod", "measure", `{"source":{"family":"random","seed":1},"intervals":1,"placement":{"oltp-1/scsi0:1":"os-lun"}}`, "not a datastore of pod"},
		{"not active", "score", `{"source":{"family":"random","seed":1},"intervals":1,"placements":[{"oltp-1/scsi0:0":"3diskLUN"}]}`, "not an active disk"},
		{"no placements", "score", `{"source":{"family":"random"},"intervals":1}`, "placements: give at least one"},
		{"headroom", "best", `{"source":{"family":"random"},"intervals":1,"headroom_pct":100}`, "headroom_pct"},
		{"too many", "best", `{"source":{"family":"large","workloads":30},"intervals":1}`, "above max_combinations"},
		{"too many disks", "best", `{"source":{"family":"large"},"intervals":1}`, "too many for exhaustive search"},
		{"subcommand", "frobnicate", `{"source":{"family":"random"}}`, "unknown subcommand"},
		{"shares disk", "measure", `{"source":{"family":"random"},"intervals":1,"shares":{"x/y":1000}}`, `shares["x/y"]: no such disk`},
		{"shares range", "measure", `{"source":{"family":"random","seed":1},"intervals":1,"shares":{"oltp-1/scsi0:1":0}}`, `shares["oltp-1/scsi0:1"]: shares: must be between`},
		{"sioc threshold", "measure", `{"source":{"family":"random","seed":1},"intervals":1,"sioc_ms":{"3diskLUN":2}}`, `sioc_ms["3diskLUN"]: thresholdMs`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run([]string{tc.command}, strings.NewReader(tc.body), &out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if out.Len() != 0 {
				t.Fatalf("wrote %q on error", out.String())
			}
		})
	}
}
