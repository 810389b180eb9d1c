package scenario

import (
	"strings"
	"testing"
)

const good = `
name: tiny
seed: 7
clusters:
  - name: C0
    hosts: [esx-01, esx-02]
datastores:
  - name: ds-fc
    capacity_gb: 150
    pod: pod1
    tags: [basil-tier/gold]
    device: {kind: fc15k, disks: 6, raid: "5", cache_mb: 512}
    sioc: {enabled: true, threshold_ms: 25}
  - name: ds-sata
    capacity_gb: 250
    hosts: [esx-01]
    device: {kind: sata7k, disks: 7, raid: "6"}
vms:
  - name: oltp-1
    host: esx-01
    disks:
      - unit: scsi0:0
        size_gb: 15
        datastore: ds-fc
      - unit: scsi0:1
        size_gb: 10
        datastore: ds-sata
        workload:
          oio: {min: 12, max: 16}
          io_size_kb: 8
          read_pct: 70
          random_pct: 100
          burst: {kind: onoff, on: 5m, off: 10m}
        io: {reservation: 100, limit: 500, shares: high}
  - name: web-1
    tags: [basil/exclude, app/web]
    host: esx-02
    powered_on: false
    disks:
      - unit: scsi0:1
        size_gb: 10
        datastore: ds-fc
        workload:
          oio: {schedule: [{at: 0s, value: 1}, {at: 10m, value: 4}], repeat: 1h}
          io_size_kb: 4
          read_pct: 95
          random_pct: 75
          phases:
            - {duration: 30m}
            - {duration: 30m, read_pct: 50}
        io: {shares: 1500}
`

func TestParseGood(t *testing.T) {
	s, err := Parse([]byte(good), "good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Datacenter != "DC0" || len(s.Hosts) != 2 || s.Hosts[0].Cluster != "C0" {
		t.Fatalf("hosts/defaults wrong: %+v", s.Hosts)
	}
	if got := s.Datastores[0].Hosts; len(got) != 2 {
		t.Fatalf("a datastore without hosts is mounted everywhere, got %v", got)
	}
	d := s.VMs[0].Disks[1]
	if d.Workload.OIO.Kind() != "range" || d.Workload.OIO.Every.Seconds() != 20 {
		t.Fatalf("ranged OIO decoded wrong: %+v", d.Workload.OIO)
	}
	if lvl, n := d.IO.Shares.Resolve(); lvl != "high" || n != 2000 || d.IO.LimitIOPS() != 500 {
		t.Fatalf("io allocation decoded wrong: %s %d %d", lvl, n, d.IO.LimitIOPS())
	}
	if lvl, n := s.VMs[1].Disks[0].IO.Shares.Resolve(); lvl != "custom" || n != 1500 {
		t.Fatalf("custom shares decoded wrong: %s %d", lvl, n)
	}
	if tags := s.VMs[1].Tags; len(tags) != 2 || tags[1].Category != "app" || tags[1].Name != "web" {
		t.Fatalf("VM tags decoded wrong: %+v", tags)
	}
	if s.Datastores[0].Tags[0].Name != "gold" {
		t.Fatal("datastore tag decoded wrong")
	}
	if s.VMs[1].IsPoweredOn() || !s.VMs[0].IsPoweredOn() {
		t.Fatal("power state decoded wrong")
	}
	if ctrl, unit := d.Controller(); ctrl != "scsi0" || unit != 1 {
		t.Fatalf("Controller() = %s %d", ctrl, unit)
	}
	if s.Settings.MaxQueryMetrics != 256 || s.Datastores[1].Device.RAID != "6" || s.Datastores[0].SIOC.ThresholdMs != 25 {
		t.Fatal("settings/device/SIOC defaults wrong")
	}
}

func TestParseRefusesWithFieldAndLine(t *testing.T) {
	cases := []struct {
		name, from, to string
		want           []string
	}{
		{"unknown field", "    pod: pod1", "    pood: pod1", []string{"line 10", "pood", "unknown field"}},
		{"unknown datastore", "        datastore: ds-sata", "        datastore: ds-nope", []string{"line 27", "vms[0].disks[1].datastore", `unknown datastore "ds-nope"`}},
		{"not mounted", "    host: esx-01\n", "    host: esx-02\n", []string{"vms[0].disks[1].datastore", "not mounted"}},
		{"negative size", "        size_gb: 15", "        size_gb: -15", []string{"line 23", "vms[0].disks[0].size_gb"}},
		{"bad kind", "kind: fc15k", "kind: floppy", []string{"line 12", "datastores[0].device.kind", "floppy"}},
		{"reservation above limit", "reservation: 100, limit: 500", "reservation: 900, limit: 500", []string{"line 34", "reservation 900 is above the limit 500"}},
		{"bad shares", "shares: high", "shares: lots", []string{"line 34", "shares must be"}},
		{"bad unit", "unit: scsi0:0", "unit: scsi0-0", []string{"line 22", "vms[0].disks[0].unit"}},
		{"bad duration", "on: 5m", "on: soon", []string{"line 33", "not a duration"}},
		{"schedule order", "{at: 10m, value: 4}", "{at: 0s, value: 4}", []string{"schedule[1].at", "increasing"}},
		{"pct out of range", "read_pct: 95", "read_pct: 195", []string{"vms[1].disks[0].workload.read_pct"}},
		{"bad tag", "basil/exclude", "exclude", []string{"category/name"}},
		{"too big", "capacity_gb: 250", "capacity_gb: 5", []string{"datastores[1].capacity_gb", "do not fit"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(good, c.from, c.to, 1)
			if src == good {
				t.Fatalf("test case does not change the scenario: %q", c.from)
			}
			_, err := Parse([]byte(src), "bad.yaml")
			if err == nil {
				t.Fatal("scenario accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	src := strings.Replace(good, "size_gb: 15", "size_gb: 0", 1)
	src = strings.Replace(src, "host: esx-02", "host: esx-09", 1)
	src = strings.Replace(src, "disks: 7", "disks: 0", 1)
	_, err := Parse([]byte(src), "bad.yaml")
	if err == nil {
		t.Fatal("scenario accepted")
	}
	serr := err.(*Error)
	if len(serr.Problems) < 3 {
		t.Fatalf("want all three problems, got %v", serr.Problems)
	}
}
