package physics

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/basil-project/basil/lab/internal/scenario"
)

// A sequential stream alone on a datastore is served with almost no positioning; every other
// stream sharing the datastore interleaves with it, so its throughput falls with the number of
// concurrently active streams (far more than the extra load alone would explain).
func TestSequentialStreamsBlend(t *testing.T) {
	seq := wl{oio: 4, sizeKB: 64, readPct: 100, randomPct: 0}
	perStream := map[int]float64{}
	for _, n := range []int{1, 2, 4, 8} {
		iv := steady(build(t, []scenario.Datastore{store("ds", "fc15k", 8)}, vms(n, "ds", seq)...), 1)
		perStream[n] = iv.Datastores["ds"].ReadIOPS / float64(n)
	}
	if perStream[1] < 1500 {
		t.Errorf("a lone sequential 64 KB stream on 8 FC disks should run near media rate, got %.0f IOPS", perStream[1])
	}
	for _, n := range []int{2, 4, 8} {
		if perStream[n] >= perStream[n/2] {
			t.Errorf("%d streams: %.0f IOPS each, not below %.0f with %d", n, perStream[n], perStream[n/2], n/2)
		}
	}
	if perStream[8] > perStream[1]/4 {
		t.Errorf("8 interleaved streams should look mostly random: %.0f vs %.0f IOPS alone", perStream[8], perStream[1])
	}
	// The guest's view of its own stream stays sequential: seeks are small.
	iv := steady(build(t, []scenario.Datastore{store("ds", "fc15k", 8)}, vms(4, "ds", seq)...), 1)
	d := iv.Disks[key("vm-00")].True
	if d.SmallSeeks < 0.99*(d.SmallSeeks+d.MediumSeeks+d.LargeSeeks) {
		t.Errorf("a sequential disk's seek histogram should be small seeks: %+v", d)
	}
}

// A Storage vMotion copy loads its source with reads and its target with writes.
func TestCopyLoadRaisesLatency(t *testing.T) {
	mk := func() *Model {
		return build(t, []scenario.Datastore{store("src", "fc15k", 6, withCache(512)), store("dst", "fc15k", 6)},
			vm("a", "src", oltp), vm("b", "dst", oltp))
	}
	base := steady(mk(), 3)
	m := mk()
	if err := m.StartCopy("svm-1", "src", "dst", 60); err != nil {
		t.Fatal(err)
	}
	loaded := steady(m, 3)
	for _, ds := range []string{"src", "dst"} {
		b, l := base.Datastores[ds], loaded.Datastores[ds]
		if l.AvgLatencyMs <= b.AvgLatencyMs*1.05 || l.Utilization <= b.Utilization || l.CopyMBps != 60 {
			t.Errorf("%s: latency %.2f -> %.2f ms, utilisation %.2f -> %.2f, copy %.0f MB/s", ds, b.AvgLatencyMs, l.AvgLatencyMs, b.Utilization, l.Utilization, l.CopyMBps)
		}
	}
	m.StopCopy("svm-1")
	after := steady(m, 3)
	if a, b := after.Datastores["dst"].AvgLatencyMs, base.Datastores["dst"].AvgLatencyMs; math.Abs(a-b) > 1e-6*b {
		t.Errorf("after StopCopy the target should be back to %.3f ms, got %.3f", b, a)
	}
	if err := m.StartCopy("svm-2", "src", "nope", 0); err == nil {
		t.Error("copy to an unknown datastore at 0 MB/s accepted")
	}
}

func TestDeterministicForASeed(t *testing.T) {
	run := func(seed int64) []*Interval {
		noise := 5.0
		s := &scenario.Scenario{
			Name: "det", Seed: seed, Hosts: []scenario.Host{{Name: "esx-01"}, {Name: "esx-02"}},
			Datastores: []scenario.Datastore{store("a", "fc15k", 6, withRAID("5"), withCache(256)), store("b", "sata7k", 7, withRAID("6"))},
			Settings:   scenario.Settings{NoisePct: &noise},
		}
		for i, w := range []wl{oltp, randWrite8k, {oio: 3, sizeKB: 64, readPct: 90, randomPct: 10}} {
			for _, ds := range []string{"a", "b"} {
				v := vm(ds+string(rune('0'+i)), ds, w)
				v.Disks[0].Workload.OIO = scenario.OIO{Min: 1, Max: 2 * w.oio}
				s.VMs = append(s.VMs, v)
			}
		}
		if p := scenario.Validate(s); len(p) > 0 {
			t.Fatal(p)
		}
		m, err := New(s)
		if err != nil {
			t.Fatal(err)
		}
		m.SetStart(t0)
		var out []*Interval
		for i := 1; i <= 10; i++ {
			out = append(out, m.Step(t0.Add(time20(i)), 20*time.Second))
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	if !reflect.DeepEqual(a, b) {
		t.Error("two runs with the same seed differ")
	}
	if reflect.DeepEqual(a[5].Disks, c[5].Disks) {
		t.Error("different seeds gave the same ranged workloads and noise")
	}
}

// A scenario stepped the same way measures the same figures whatever the wall clock said when it
// started (a lab reset "restarts time now"): the noise hashes the interval's offset from the start,
// aligned down to the interval, not its absolute time. Different seeds still draw differently.
func TestMeasuredFiguresDoNotDependOnTheWallClock(t *testing.T) {
	run := func(seed int64, start time.Time) []DiskMetrics {
		noise := 5.0
		s := &scenario.Scenario{
			Name: "wall", Seed: seed, Hosts: []scenario.Host{{Name: "esx-01"}},
			Datastores: []scenario.Datastore{store("ds", "fc15k", 6, withCache(256))},
			VMs:        vms(4, "ds", oltp), Settings: scenario.Settings{NoisePct: &noise},
		}
		if p := scenario.Validate(s); len(p) > 0 {
			t.Fatal(p)
		}
		m, err := New(s)
		if err != nil {
			t.Fatal(err)
		}
		m.SetStart(start)
		first := start.Truncate(20 * time.Second)
		var out []DiskMetrics
		for i := 1; i <= 5; i++ {
			out = append(out, m.Step(first.Add(time20(i)), 20*time.Second).Disks[key("vm-00")].Measured)
		}
		return out
	}
	morning := t0.Add(7*time.Hour + 3*time.Second)
	weekLater := t0.Add(7*24*time.Hour + 13*time.Hour + 7*time.Second)
	a, b := run(7, morning), run(7, weekLater)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the same scenario started at another time measured differently:\n%+v\n%+v", a[0], b[0])
	}
	if reflect.DeepEqual(a, run(8, morning)) {
		t.Error("another seed measured the same noise")
	}
}

// Measured counters scatter around the truth by the scenario's noise; the truth has none.
func TestMeasurementNoise(t *testing.T) {
	noise := 4.0
	s := &scenario.Scenario{
		Name: "noise", Seed: 3, Hosts: []scenario.Host{{Name: "esx-01"}},
		Datastores: []scenario.Datastore{store("ds", "fc15k", 12)}, VMs: vms(40, "ds", wl{oio: 2, sizeKB: 8, readPct: 70, randomPct: 100}),
		Settings: scenario.Settings{NoisePct: &noise},
	}
	if p := scenario.Validate(s); len(p) > 0 {
		t.Fatal(p)
	}
	m, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	var rel []float64
	for _, iv := range []*Interval{steady(m, 1), m.Step(t0.Add(time20(2)), 20e9)} {
		for _, d := range iv.Disks {
			rel = append(rel, d.Measured.ReadIOPS/d.True.ReadIOPS-1, d.Measured.WriteLatencyMs/d.True.WriteLatencyMs-1)
			if d.True.ReadOIO+d.True.WriteOIO != d.True.ReadIOPS*d.True.ReadLatencyMs/1000+d.True.WriteIOPS*d.True.WriteLatencyMs/1000 {
				t.Fatal("the truth must be exact")
			}
		}
	}
	mean, sq := 0.0, 0.0
	for _, r := range rel {
		mean += r
		sq += r * r
	}
	mean /= float64(len(rel))
	sd := math.Sqrt(sq/float64(len(rel)) - mean*mean)
	if math.Abs(mean) > 0.01 || sd < 0.03 || sd > 0.05 {
		t.Errorf("measured/true - 1: mean %.4f, sd %.4f; want mean ≈ 0 and sd ≈ 0.04", mean, sd)
	}
}

// The seek histogram follows the workload's random share.
func TestSeekHistogram(t *testing.T) {
	for _, rnd := range []float64{0, 25, 75, 100} {
		iv := steady(build(t, []scenario.Datastore{store("ds", "fc15k", 6)}, vm("a", "ds", wl{oio: 4, sizeKB: 8, readPct: 100, randomPct: rnd})), 1)
		d := iv.Disks[key("a")].True
		total := d.SmallSeeks + d.MediumSeeks + d.LargeSeeks
		if math.Abs(total-d.ReadIOPS*20) > 1e-6*total {
			t.Errorf("random %g%%: seeks %.0f, IOs in the interval %.0f", rnd, total, d.ReadIOPS*20)
		}
		if got := (d.MediumSeeks + d.LargeSeeks) / total * 100; math.Abs(got-rnd) > 0.5 {
			t.Errorf("random %g%%: (medium+large)/total = %.2f%%", rnd, got)
		}
	}
}

// IOs beyond a host's queue depth wait in the host: their wait is part of the VM's latency, not
// of the array's.
func TestHostQueueDepth(t *testing.T) {
	one := steady(build(t, []scenario.Datastore{store("ds", "fc15k", 16)}, vms(4, "ds", wl{oio: 16, sizeKB: 8, readPct: 100, randomPct: 100})...), 1)
	hd := one.HostDatastores[HostDatastore{"esx-01", "ds"}].True
	ds := one.Datastores["ds"]
	if hd.MaxQueueDepth != 32 || ds.AvgLatencyMs < 1.9*ds.DeviceLatencyMs {
		t.Errorf("64 OIO through a queue depth of 32: VM latency %.1f ms, device %.1f ms", ds.AvgLatencyMs, ds.DeviceLatencyMs)
	}
	// Spread over two hosts the same IOs all reach the array.
	spread := vms(4, "ds", wl{oio: 16, sizeKB: 8, readPct: 100, randomPct: 100})
	spread[1].Host, spread[3].Host = "esx-02", "esx-02"
	two := steady(build(t, []scenario.Datastore{store("ds", "fc15k", 16)}, spread...), 1).Datastores["ds"]
	if math.Abs(two.AvgLatencyMs-two.DeviceLatencyMs) > 1e-6 || two.ReadIOPS <= ds.ReadIOPS {
		t.Errorf("two hosts: VM %.2f ms vs device %.2f ms, %.0f vs %.0f IOPS", two.AvgLatencyMs, two.DeviceLatencyMs, two.ReadIOPS, ds.ReadIOPS)
	}
}

// Powered-off VMs and disks on inaccessible datastores do no IO; moving a disk moves its load.
func TestStateChanges(t *testing.T) {
	m := build(t, []scenario.Datastore{store("a", "fc15k", 6), store("b", "fc15k", 6)}, vm("x", "a", oltp), vm("y", "a", oltp, onHost("esx-02")))
	base := steady(m, 1)
	if err := m.SetPower("x", false); err != nil {
		t.Fatal(err)
	}
	iv := steady(m, 1)
	if d := iv.Disks[key("x")].True; d != (DiskMetrics{}) {
		t.Errorf("powered-off VM did IO: %+v", d)
	}
	if iopsOf(iv, "y") <= iopsOf(base, "y") {
		t.Error("y should speed up when x stops")
	}
	_ = m.SetPower("x", true)
	if err := m.MoveDisk(key("x"), "b"); err != nil {
		t.Fatal(err)
	}
	iv = steady(m, 1)
	if iv.Datastores["b"].ReadIOPS == 0 || iv.Datastores["a"].ReadIOPS >= base.Datastores["a"].ReadIOPS {
		t.Errorf("the move should carry x's load to b: %+v", iv.Datastores)
	}
	if ds, _ := m.DiskDatastore(key("x")); ds != "b" {
		t.Errorf("DiskDatastore = %q", ds)
	}
	if err := m.SetAccessible("b", false); err != nil {
		t.Fatal(err)
	}
	iv = steady(m, 1)
	if iopsOf(iv, "x") != 0 || iopsOf(iv, "y") == 0 {
		t.Error("a disk on an inaccessible datastore must do no IO, others keep going")
	}
	if err := m.SetVMHost("y", "esx-01"); err != nil {
		t.Fatal(err)
	}
	iv = steady(m, 1)
	if _, ok := iv.HostDatastores[HostDatastore{"esx-01", "a"}]; !ok || iv.HostDatastores[HostDatastore{"esx-01", "a"}].True.ReadIOPS == 0 {
		t.Error("after SetVMHost y's IO should come from esx-01")
	}
	for _, err := range []error{m.MoveDisk(key("zz"), "a"), m.MoveDisk(key("x"), "zz"), m.SetVMHost("zz", "esx-01"),
		m.SetVMHost("x", "esx-99"), m.SetPower("zz", true), m.SetAccessible("zz", true), m.SetSIOC("zz", true, 30)} {
		if err == nil {
			t.Error("an unknown VM, disk, host or datastore was accepted")
		}
	}
}

// The vSphere side steps the model from one goroutine while operations change it from others
// (run with -race).
func TestConcurrentUse(t *testing.T) {
	m := contended(t, withSIOC(20))
	m.SetStart(t0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			_ = m.SetIOAllocation(key("small"), 0, -1, int32(500+100*i))
			_ = m.StartCopy("c", "ds", "ds", 10)
			m.StopCopy("c")
			_ = m.SetPower("lim", i%2 == 0)
		}
	}()
	for i := 1; i <= 20; i++ {
		if iv := m.Step(t0.Add(time20(i)), 20*time.Second); iv.TotalIOPS <= 0 {
			t.Fatal("no IO")
		}
	}
	<-done
}
