package physics

import (
	"math"
	"strings"
	"testing"

	"github.com/basil-project/basil/lab/internal/scenario"
)

// contended is a 6-disk FC datastore driven hard by four disks on two hosts, with allocations:
// "big" has 4x the shares of "small", "res" reserves 400 IOPS with few shares, "lim" is
// limited to 150 IOPS.
func contended(t *testing.T, opts ...dsOpt) *Model {
	w := wl{oio: 32, sizeKB: 8, readPct: 100, randomPct: 100}
	return build(t, []scenario.Datastore{store("ds", "fc15k", 6, append([]dsOpt{withRAID("5")}, opts...)...)},
		vm("big", "ds", w, withAlloc(0, -1, 4000)),
		vm("small", "ds", w, withAlloc(0, -1, 1000), onHost("esx-02")),
		vm("res", "ds", w, withAlloc(400, -1, 500)),
		vm("lim", "ds", w, withAlloc(0, 150, 1000)))
}

func iopsOf(iv *Interval, name string) float64 {
	d := iv.Disks[key(name)].True
	return d.ReadIOPS + d.WriteIOPS
}

func TestSIOCEnforcesAllocationsUnderContention(t *testing.T) {
	iv := steady(contended(t, withSIOC(20)), 2)
	ds := iv.Datastores["ds"]
	if !ds.Congested || ds.ThresholdMs != 20 {
		t.Fatalf("datastore should be congested with threshold 20 ms: %+v", ds)
	}
	if math.Abs(ds.DeviceLatencyMs-20) > 0.5 {
		t.Errorf("SIOC should hold the device latency at the threshold, got %.2f ms", ds.DeviceLatencyMs)
	}
	big, small, res, lim := iopsOf(iv, "big"), iopsOf(iv, "small"), iopsOf(iv, "res"), iopsOf(iv, "lim")
	if r := big / small; math.Abs(r-4) > 0.05 {
		t.Errorf("shares 4000:1000 across hosts should give 4:1, got %.0f:%.0f", big, small)
	}
	if res < 400*(1-1e-3) {
		t.Errorf("reservation of 400 IOPS not met: %.1f", res)
	}
	if res > 450 {
		t.Errorf("the reserved disk has few shares and should get about its reservation, got %.1f", res)
	}
	if lim > 150*(1+1e-6) {
		t.Errorf("limit of 150 IOPS exceeded: %.1f", lim)
	}
	// The host's reported queue depth is its SIOC window, below the configured 32.
	if qd := iv.HostDatastores[HostDatastore{"esx-02", "ds"}].True.MaxQueueDepth; qd >= 32 || qd < 1 {
		t.Errorf("esx-02's window should be throttled below 32, got %g", qd)
	}
}

// A threshold below what the spindles deliver even lightly loaded cannot be met: SIOC throttles
// the hosts to their minimum windows of 4 IOs in total and no further, so the datastore keeps the
// throughput of those 8 IOs (not a trickle per disk), still divided by shares.
func TestSIOCKeepsMinimumHostWindows(t *testing.T) {
	iv := steady(contended(t, withSIOC(5)), 2)
	ds := iv.Datastores["ds"]
	if !ds.Congested {
		t.Fatalf("datastore should be congested at a 5 ms threshold: %+v", ds)
	}
	if ds.DeviceLatencyMs <= 5 {
		t.Errorf("15k spindles cannot answer random reads in 5 ms; got %.2f ms", ds.DeviceLatencyMs)
	}
	total, atArray := 0.0, 0.0
	for _, name := range []string{"big", "small", "res", "lim"} {
		total += iopsOf(iv, name)
	}
	for _, h := range []string{"esx-01", "esx-02"} {
		atArray += iv.HostDatastores[HostDatastore{h, "ds"}].True.MaxQueueDepth
	}
	// Reported windows are whole slots (rounded up per host): 8 IOs in total, maybe 9.
	if atArray < 2*minHostWindow || atArray > 2*minHostWindow+1 {
		t.Errorf("the hosts should keep their minimum windows (8 IOs) at the array, got %g", atArray)
	}
	// Little's law at the array: those IOs complete at about windows / latency.
	if want := 2 * minHostWindow / ds.DeviceLatencyMs * 1000; total < 0.8*want {
		t.Errorf("throughput %.0f IOPS is far below the %.0f the minimum windows sustain", total, want)
	}
	if big, small := iopsOf(iv, "big"), iopsOf(iv, "small"); math.Abs(big/small-4) > 0.2 {
		t.Errorf("shares 4000:1000 should still give 4:1 at the floor, got %.0f:%.0f", big, small)
	}
}

func TestSIOCDoesNothingBelowThreshold(t *testing.T) {
	without := steady(contended(t), 2)
	with := steady(contended(t, withSIOC(100)), 2)
	if with.Datastores["ds"].Congested {
		t.Fatalf("latency %.1f ms is below 100 ms, not congested", with.Datastores["ds"].DeviceLatencyMs)
	}
	for _, name := range []string{"big", "small", "res", "lim"} {
		if a, b := iopsOf(without, name), iopsOf(with, name); math.Abs(a-b) > 1e-9*a {
			t.Errorf("%s: %.3f IOPS without SIOC, %.3f with SIOC below its threshold", name, a, b)
		}
	}
	// Shares do nothing without SIOC congestion: the two unlimited disks of esx-01 get the same.
	if a, b := iopsOf(without, "big"), iopsOf(without, "res"); math.Abs(a-b) > 1e-6*a {
		t.Errorf("without SIOC shares should not matter: big %.1f, res %.1f", a, b)
	}
}

// The host enforces limits at all times, SIOC or not; a limit above what the disk gets anyway
// changes nothing.
func TestLimitEnforcedWithoutSIOC(t *testing.T) {
	iv := steady(contended(t), 2)
	if lim := iopsOf(iv, "lim"); math.Abs(lim-150) > 1e-3 {
		t.Errorf("limited disk should run at its 150 IOPS limit, got %.2f", lim)
	}
	d := iv.Disks[key("lim")].True
	if d.ReadLatencyMs < 32.0/150*1000*(1-1e-6) {
		t.Errorf("a limited disk's IOs wait in the host: latency %.1f ms, want OIO/limit = %.1f ms", d.ReadLatencyMs, 32.0/150*1000)
	}
	m := contended(t)
	if err := m.SetIOAllocation(key("lim"), 0, 100000, 1000); err != nil {
		t.Fatal(err)
	}
	if got := iopsOf(steady(m, 2), "lim"); got < 300 {
		t.Errorf("a generous limit should not bind: %.1f IOPS", got)
	}
}

// SetIOAllocation changes what SIOC enforces.
func TestSetIOAllocationTakesEffect(t *testing.T) {
	m := contended(t, withSIOC(20))
	before := iopsOf(steady(m, 2), "small")
	if err := m.SetIOAllocation(key("small"), 0, -1, 8000); err != nil {
		t.Fatal(err)
	}
	after := iopsOf(steady(m, 2), "small")
	if after < 1.8*before {
		t.Errorf("raising shares from 1000 to 8000 under contention: %.0f -> %.0f IOPS", before, after)
	}
}

func TestSetIOAllocationRefusesBadValues(t *testing.T) {
	m := contended(t)
	err := m.SetIOAllocation(key("big"), 500, 100, 0)
	if err == nil {
		t.Fatal("accepted a reservation above the limit and zero shares")
	}
	for _, want := range []string{"reservation", "shares"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if err := m.SetIOAllocation(DiskKey{"nope", "scsi0:1"}, 0, -1, 1000); err == nil || !strings.Contains(err.Error(), "unknown disk") {
		t.Errorf("unknown disk: %v", err)
	}
	// Nothing changed: big still has its 4000 shares and no limit.
	if iopsOf(steady(m, 1), "big") <= 150 {
		t.Error("a refused allocation must not change the disk")
	}
}

func TestSIOCAutomaticThreshold(t *testing.T) {
	m := contended(t)
	threshold := map[float64]float64{}
	for _, pct := range []float64{60, 90} {
		if err := m.SetSIOCAutomatic("ds", true, pct); err != nil {
			t.Fatal(err)
		}
		ds := steady(m, 2).Datastores["ds"]
		threshold[pct] = ds.ThresholdMs
		if ds.ThresholdMs < 5 || ds.ThresholdMs > 100 {
			t.Errorf("automatic threshold %.1f ms at %g%% of peak", ds.ThresholdMs, pct)
		}
		if want := ds.DeviceLatencyMs > ds.ThresholdMs-0.5; ds.Congested != want {
			t.Errorf("%g%%: congested %v with device latency %.1f ms and threshold %.1f ms", pct, ds.Congested, ds.DeviceLatencyMs, ds.ThresholdMs)
		}
	}
	if threshold[60] >= threshold[90] {
		t.Errorf("a lower share of peak throughput must give a lower threshold: %v", threshold)
	}
	if err := m.SetSIOCAutomatic("ds", true, 30); err == nil {
		t.Error("peak percentage 30 accepted")
	}
	if err := m.SetSIOC("ds", true, 2); err == nil || !strings.Contains(err.Error(), "thresholdMs") {
		t.Errorf("threshold 2 ms: %v", err)
	}
}
