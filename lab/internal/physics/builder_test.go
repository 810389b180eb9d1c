package physics

import (
	"fmt"
	"testing"
	"time"

	"github.com/basil-project/basil/lab/internal/scenario"
)

// Builders for test scenarios, in the style of a BuildTestPod helper: a datastore, then VMs with
// one workload disk each, then validated like a scenario file.

type dsOpt func(*scenario.Datastore)

func withCache(mb float64) dsOpt { return func(d *scenario.Datastore) { d.Device.CacheMB = mb } }
func withRAID(r string) dsOpt    { return func(d *scenario.Datastore) { d.Device.RAID = r } }
func withSIOC(ms float64) dsOpt {
	return func(d *scenario.Datastore) { d.SIOC = scenario.SIOC{Enabled: true, ThresholdMs: ms} }
}
func withHosts(h ...string) dsOpt { return func(d *scenario.Datastore) { d.Hosts = h } }

func store(name, kind string, disks int, opts ...dsOpt) scenario.Datastore {
	d := scenario.Datastore{Name: name, CapacityGB: 10000, Device: scenario.Device{Kind: kind, Disks: disks, RAID: "0"}}
	for _, o := range opts {
		o(&d)
	}
	return d
}

type wl struct {
	oio, sizeKB, readPct, randomPct float64
}

var (
	randRead8k  = wl{oio: 8, sizeKB: 8, readPct: 100, randomPct: 100}
	randWrite8k = wl{oio: 8, sizeKB: 8, readPct: 0, randomPct: 100}
	oltp        = wl{oio: 14, sizeKB: 8, readPct: 70, randomPct: 100}
)

type vmOpt func(*scenario.VM)

func onHost(h string) vmOpt { return func(v *scenario.VM) { v.Host = h } }
func withAlloc(res, limit int64, shares int32) vmOpt {
	return func(v *scenario.VM) {
		a := &v.Disks[0].IO
		a.Reservation, a.Limit, a.Shares = res, &limit, scenario.Shares{Level: "custom", Value: shares}
	}
}

func vm(name, ds string, w wl, opts ...vmOpt) scenario.VM {
	v := scenario.VM{Name: name, Host: "esx-01", Disks: []scenario.Disk{{
		Unit: "scsi0:1", SizeGB: 10, Datastore: ds,
		Workload: &scenario.Workload{OIO: scenario.OIO{Fixed: w.oio}, IOSizeKB: w.sizeKB, ReadPct: w.readPct, RandomPct: w.randomPct},
	}}}
	for _, o := range opts {
		o(&v)
	}
	return v
}

func build(t testing.TB, stores []scenario.Datastore, vms ...scenario.VM) *Model {
	t.Helper()
	zero := 0.0
	s := &scenario.Scenario{
		Name: "test", Seed: 42, Hosts: []scenario.Host{{Name: "esx-01"}, {Name: "esx-02"}},
		Datastores: stores, VMs: vms, Settings: scenario.Settings{NoisePct: &zero},
	}
	if problems := scenario.Validate(s); len(problems) > 0 {
		t.Fatalf("test scenario invalid: %v", problems)
	}
	m, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var t0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

// steady steps the model n times (so the cache reaches its regime) and returns the last interval.
func steady(m *Model, n int) *Interval {
	m.SetStart(t0)
	var iv *Interval
	for i := 1; i <= n; i++ {
		iv = m.Step(t0.Add(time.Duration(i)*20*time.Second), 20*time.Second)
	}
	return iv
}

func key(vm string) DiskKey { return DiskKey{VM: vm, Unit: "scsi0:1"} }

func vms(n int, ds string, w wl, opts ...vmOpt) []scenario.VM {
	out := make([]scenario.VM, n)
	for i := range out {
		out[i] = vm(fmt.Sprintf("vm-%02d", i), ds, w, opts...)
	}
	return out
}

func time20(i int) time.Duration { return time.Duration(i) * 20 * time.Second }

func dur(secs int) scenario.Duration {
	return scenario.Duration{Duration: time.Duration(secs) * time.Second}
}
