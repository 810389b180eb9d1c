package physics

import (
	"math"
	"testing"

	"github.com/basil-project/basil/lab/internal/scenario"
)

// Little's law must hold for every disk: its true throughput times its latency is the number of
// IOs it keeps in flight (reads and writes, host queue included).
func TestLittlesLawPerDisk(t *testing.T) {
	cases := []struct {
		name   string
		stores []scenario.Datastore
		vms    []scenario.VM
	}{
		{"one random reader", []scenario.Datastore{store("ds", "fc15k", 6)}, []scenario.VM{vm("a", "ds", randRead8k)}},
		{"mixed on RAID5 with cache", []scenario.Datastore{store("ds", "fc15k", 6, withRAID("5"), withCache(512))},
			[]scenario.VM{vm("a", "ds", oltp), vm("b", "ds", randWrite8k, onHost("esx-02")), vm("c", "ds", wl{4, 64, 90, 10})}},
		{"host queue overflow", []scenario.Datastore{store("ds", "sata7k", 7, withRAID("6"))},
			vms(5, "ds", wl{oio: 12, sizeKB: 4, readPct: 67, randomPct: 100})},
		{"ssd", []scenario.Datastore{store("ds", "ssd", 4, withRAID("10"))}, vms(3, "ds", oltp)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			iv := steady(build(t, c.stores, c.vms...), 3)
			for _, v := range c.vms {
				d := iv.Disks[key(v.Name)].True
				got := (d.ReadIOPS*d.ReadLatencyMs + d.WriteIOPS*d.WriteLatencyMs) / 1000
				want := v.Disks[0].Workload.OIO.Fixed
				if math.Abs(got-want) > 1e-6*want {
					t.Errorf("%s: IOPS × latency = %.6f, want OIO %g", v.Name, got, want)
				}
				if oio := d.ReadOIO + d.WriteOIO; math.Abs(oio-want) > 1e-6*want {
					t.Errorf("%s: read+write OIO = %.6f, want %g", v.Name, oio, want)
				}
			}
		})
	}
}

// Latency grows with the total outstanding IOs on a datastore, and throughput does not fall.
func TestLatencyGrowsWithOIO(t *testing.T) {
	for _, kind := range []string{scenario.KindFC15k, scenario.KindSATA7k, scenario.KindSSD} {
		t.Run(kind, func(t *testing.T) {
			prevLat, prevIOPS := 0.0, 0.0
			for _, oio := range []float64{1, 2, 4, 8, 16, 32, 64} {
				w := randRead8k
				w.oio = oio
				iv := steady(build(t, []scenario.Datastore{store("ds", kind, 6)}, vm("a", "ds", w)), 1)
				ds := iv.Datastores["ds"]
				if ds.AvgLatencyMs <= prevLat {
					t.Errorf("OIO %g: latency %.3f ms did not grow from %.3f", oio, ds.AvgLatencyMs, prevLat)
				}
				if ds.ReadIOPS < prevIOPS*(1-1e-4) {
					t.Errorf("OIO %g: throughput %.1f fell from %.1f", oio, ds.ReadIOPS, prevIOPS)
				}
				prevLat, prevIOPS = ds.AvgLatencyMs, ds.ReadIOPS
			}
		})
	}
}

// More spindles under the same load give lower latency.
func TestLatencyFallsWithSpindles(t *testing.T) {
	prev := math.Inf(1)
	for _, n := range []int{3, 6, 9, 12, 16} {
		iv := steady(build(t, []scenario.Datastore{store("ds", "fc15k", n)}, vms(4, "ds", oltp)...), 2)
		lat := iv.Datastores["ds"].AvgLatencyMs
		if lat >= prev {
			t.Errorf("%d disks: latency %.2f ms not below %.2f", n, lat, prev)
		}
		prev = lat
	}
}

// At equal load, FC beats SATA and SSD beats both; at queue depth one the per-device figures
// are those of the data sheets.
func TestDeviceKinds(t *testing.T) {
	lat := map[string]float64{}
	for _, kind := range []string{scenario.KindSSD, scenario.KindFC15k, scenario.KindSAS10k, scenario.KindSATA7k} {
		iv := steady(build(t, []scenario.Datastore{store("ds", kind, 7, withRAID("5"))}, vms(3, "ds", randRead8k)...), 1)
		lat[kind] = iv.Datastores["ds"].AvgLatencyMs
	}
	if !(lat["ssd"] < lat["fc15k"] && lat["fc15k"] < lat["sas10k"] && lat["sas10k"] < lat["sata7k"]) {
		t.Errorf("latency order wrong: %v", lat)
	}
	single := []struct {
		kind     string
		min, max float64 // random 8 KB IOPS of one device at queue depth 1
	}{{"fc15k", 170, 200}, {"sas10k", 120, 145}, {"sata7k", 70, 85}, {"ssd", 3000, 12000}}
	for _, c := range single {
		w := randRead8k
		w.oio = 1
		iv := steady(build(t, []scenario.Datastore{store("ds", c.kind, 1)}, vm("a", "ds", w)), 1)
		if got := iv.Disks[key("a")].True.ReadIOPS; got < c.min || got > c.max {
			t.Errorf("%s: %.0f random 8 KB IOPS at QD1, want %g-%g", c.kind, got, c.min, c.max)
		}
	}
}
