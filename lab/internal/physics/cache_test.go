package physics

import (
	"testing"

	"github.com/basil-project/basil/lab/internal/scenario"
)

// Below what the devices can destage, the cache acknowledges every write at cache latency and
// holds no backlog, interval after interval.
func TestCacheAbsorbsWritesBelowDestageRate(t *testing.T) {
	m := build(t, []scenario.Datastore{store("ds", "fc15k", 8, withRAID("5"), withCache(512))},
		vm("a", "ds", wl{oio: 4, sizeKB: 8, readPct: 70, randomPct: 100}))
	m.SetStart(t0)
	for i := 1; i <= 30; i++ {
		iv := m.Step(t0.Add(time20(i)), 20e9)
		ds, d := iv.Datastores["ds"], iv.Disks[key("a")].True
		if ds.CacheDirtyMB != 0 || ds.CacheFull {
			t.Fatalf("interval %d: cache backlog %.1f MB (full %v) under a light load", i, ds.CacheDirtyMB, ds.CacheFull)
		}
		if d.WriteLatencyMs > 1 || d.WriteLatencyMs*5 > d.ReadLatencyMs {
			t.Fatalf("interval %d: write latency %.2f ms is not cache latency (reads %.2f ms)", i, d.WriteLatencyMs, d.ReadLatencyMs)
		}
	}
}

// Writes beyond the destage rate fill the cache over several intervals (the backlog is carried
// from one Step to the next and bounded by cache_mb); once it is full, writes see back-end
// latency; when the load stops, the backlog drains.
func TestCacheFillsCarriesAndDrains(t *testing.T) {
	const cacheMB = 256
	writer := vm("w", "ds", wl{sizeKB: 16, readPct: 30, randomPct: 100})
	writer.Disks[0].Workload.OIO = scenario.OIO{Schedule: []scenario.ScheduleStep{
		{At: dur(0), Value: 16}, {At: dur(600), Value: 0},
	}}
	m := build(t, []scenario.Datastore{store("ds", "sata7k", 6, withRAID("6"), withCache(cacheMB))}, writer)
	m.SetStart(t0)
	var dirty []float64
	var writeLat []float64
	full := 0
	for i := 1; i <= 60; i++ {
		iv := m.Step(t0.Add(time20(i)), 20e9)
		ds := iv.Datastores["ds"]
		dirty = append(dirty, ds.CacheDirtyMB)
		writeLat = append(writeLat, iv.Disks[key("w")].True.WriteLatencyMs)
		if ds.CacheFull && full == 0 {
			full = i - 1 // index of the first interval that ended full
		}
	}
	if dirty[0] <= 0 || dirty[0] >= cacheMB || writeLat[0] > 1 {
		t.Fatalf("first interval: backlog %.0f MB, write latency %.2f ms; want a partly filled cache acknowledging fast", dirty[0], writeLat[0])
	}
	if full < 2 {
		t.Fatalf("cache should take several intervals to fill, full after %d (backlog %v)", full+1, dirty)
	}
	for i := 1; i <= full; i++ {
		if dirty[i] < dirty[i-1] {
			t.Fatalf("backlog fell from %.0f to %.0f MB while filling", dirty[i-1], dirty[i])
		}
	}
	for i, d := range dirty {
		if d > cacheMB+1e-9 {
			t.Fatalf("interval %d: backlog %.0f MB exceeds the cache", i+1, d)
		}
	}
	if lat := writeLat[full+1]; lat < 20 {
		t.Errorf("cache full but writes see %.2f ms, not the RAID 6 SATA back end", lat)
	}
	// The load stops at 600 s (interval 30): the backlog drains over several intervals.
	if dirty[30] <= 0 || dirty[31] >= dirty[30] || dirty[59] != 0 {
		t.Errorf("backlog should drain gradually once the writes stop: %v", dirty[29:])
	}
}

// Once the cache saturates, a small random write costs 4 device IOs on RAID 5 and 2 on RAID 10.
func TestRAID5WritesCostMoreThanRAID10WhenSaturated(t *testing.T) {
	lat := map[string]float64{}
	iops := map[string]float64{}
	for _, raid := range []string{"10", "5", "6"} {
		m := build(t, []scenario.Datastore{store("ds", "fc15k", 8, withRAID(raid), withCache(256))}, vms(2, "ds", randWrite8k)...)
		iv := steady(m, 30)
		if !iv.Datastores["ds"].CacheFull {
			t.Fatalf("RAID %s: cache not saturated by pure random writes", raid)
		}
		lat[raid] = iv.Datastores["ds"].WriteLatencyMs
		iops[raid] = iv.Datastores["ds"].WriteIOPS
	}
	if !(lat["10"] < lat["5"] && lat["5"] < lat["6"]) {
		t.Errorf("write latency should rank RAID 10 < 5 < 6 once saturated: %v", lat)
	}
	// Same devices, same outstanding writes: the throughput ratio is the write penalty ratio.
	if r := iops["10"] / iops["5"]; r < 1.6 || r > 2.4 {
		t.Errorf("RAID 10 / RAID 5 write IOPS = %.2f, want about 2 (penalty 2 vs 4)", r)
	}
}

// Without a cache every write waits for the devices.
func TestNoCacheMeansWriteThrough(t *testing.T) {
	iv := steady(build(t, []scenario.Datastore{store("ds", "fc15k", 6, withRAID("10"))}, vm("a", "ds", oltp)), 1)
	d := iv.Disks[key("a")].True
	if d.WriteLatencyMs < 5 {
		t.Errorf("write latency %.2f ms without a cache", d.WriteLatencyMs)
	}
}
