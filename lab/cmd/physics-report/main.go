// Command physics-report prints, from the lab's storage physics itself, the tables the lab README
// shows: latency against total outstanding IOs, against spindle count and device kind, Little's
// law per disk, the write cache over time, SIOC's enforcement, and the BASIL testbeds beside the
// paper's measured figures.
//
//	physics-report [--scenarios DIR]            all tables
//	physics-report --scenario FILE [--minutes 30]   per-datastore and per-disk averages of one scenario
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/basil-project/basil/lab/internal/physics"
	"github.com/basil-project/basil/lab/internal/scenario"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("physics-report", flag.ContinueOnError)
	dir := fs.String("scenarios", "scenarios", "directory of the BASIL testbed scenarios")
	file := fs.String("scenario", "", "report on this scenario only")
	minutes := fs.Int("minutes", 30, "simulated minutes to average over")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *minutes < 1 {
		return fmt.Errorf("--minutes: must be at least 1, got %d", *minutes)
	}
	intervals := *minutes * 3
	if *file != "" {
		s, err := scenario.Load(*file)
		if err != nil {
			return err
		}
		avg, err := average(s, intervals)
		if err != nil {
			return err
		}
		printScenario(out, s.Name, avg)
		return nil
	}
	for _, section := range []func(io.Writer) error{latencyVsOIO, latencyVsSpindles, deviceKinds, cacheOverTime, siocEnforcement} {
		if err := section(out); err != nil {
			return err
		}
	}
	if err := littlesLaw(out, filepath.Join(*dir, "basil-6.2.yaml")); err != nil {
		return err
	}
	return calibration(out, *dir, intervals)
}

var start = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

const step = 20 * time.Second

// model builds a validated scenario into a model started at `start`.
func model(s *scenario.Scenario) (*physics.Model, error) {
	if problems := scenario.Validate(s); len(problems) > 0 {
		return nil, &scenario.Error{Source: s.Name, Problems: problems}
	}
	m, err := physics.New(s)
	if err != nil {
		return nil, err
	}
	m.SetStart(start)
	return m, nil
}

// lab is a one-datastore scenario with `vms` VMs splitting `oio` outstanding IOs of one workload,
// alternating between two hosts.
func lab(dev scenario.Device, vms int, oio, sizeKB, readPct, randomPct float64) *scenario.Scenario {
	zero := 0.0
	s := &scenario.Scenario{
		Name: "report", Seed: 1, Hosts: []scenario.Host{{Name: "esx-01"}, {Name: "esx-02"}},
		Datastores: []scenario.Datastore{{Name: "ds", CapacityGB: 10000, Device: dev}},
		Settings:   scenario.Settings{NoisePct: &zero},
	}
	for i := range vms {
		s.VMs = append(s.VMs, scenario.VM{
			Name: fmt.Sprintf("vm-%d", i+1), Host: fmt.Sprintf("esx-%02d", 1+i%2),
			Disks: []scenario.Disk{{Unit: "scsi0:1", SizeGB: 10, Datastore: "ds", Workload: &scenario.Workload{
				OIO: scenario.OIO{Fixed: oio / float64(vms)}, IOSizeKB: sizeKB, ReadPct: readPct, RandomPct: randomPct,
			}}},
		})
	}
	return s
}

// settle steps a model n intervals and returns the last.
func settle(m *physics.Model, n int) *physics.Interval {
	var iv *physics.Interval
	for i := 1; i <= n; i++ {
		iv = m.Step(start.Add(time.Duration(i)*step), step)
	}
	return iv
}

func table(out io.Writer, title, note string, header ...string) *tabwriter.Writer {
	fmt.Fprintf(out, "\n## %s\n\n", title)
	if note != "" {
		fmt.Fprintf(out, "%s\n\n", note)
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, strings.Join(header, "\t")+"\t")
	return w
}

func row(w io.Writer, cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		switch v := c.(type) {
		case float64:
			switch {
			case v == 0:
				parts[i] = "0"
			case math.Abs(v) >= 100:
				parts[i] = fmt.Sprintf("%.0f", v)
			case math.Abs(v) >= 10:
				parts[i] = fmt.Sprintf("%.1f", v)
			default:
				parts[i] = fmt.Sprintf("%.2f", v)
			}
		default:
			parts[i] = fmt.Sprint(v)
		}
	}
	fmt.Fprintln(w, strings.Join(parts, "\t")+"\t")
}

// slope fits latency = a + b·OIO by least squares.
func slope(oio, lat []float64) float64 {
	n := float64(len(oio))
	var sx, sy, sxx, sxy float64
	for i := range oio {
		sx += oio[i]
		sy += lat[i]
		sxx += oio[i] * oio[i]
		sxy += oio[i] * lat[i]
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

func latencyVsOIO(out io.Writer) error {
	dev := scenario.Device{Kind: scenario.KindFC15k, Disks: 6, RAID: "5", CacheMB: 512}
	w := table(out, "Latency against total outstanding IOs (one datastore)",
		"6 x 15k FC, RAID 5, 512 MB write cache; four VMs on two hosts share the OIO; OLTP-like 8 KB, 70 % read, 100 % random; steady state after 10 min.",
		"total OIO", "IOPS", "avg ms", "read ms", "write ms", "device ms", "util", "IOPS x ms / OIO")
	for _, oio := range []float64{1, 2, 4, 8, 16, 32, 48, 64, 96, 128} {
		m, err := model(lab(dev, 4, oio, 8, 70, 100))
		if err != nil {
			return err
		}
		ds := settle(m, 30).Datastores["ds"]
		iops := ds.ReadIOPS + ds.WriteIOPS
		row(w, oio, iops, ds.AvgLatencyMs, ds.ReadLatencyMs, ds.WriteLatencyMs, ds.DeviceLatencyMs, ds.Utilization, iops*ds.AvgLatencyMs/1000/oio)
	}
	return w.Flush()
}

func latencyVsSpindles(out io.Writer) error {
	w := table(out, "Latency against spindle count (BASIL Fig. 6 set-up)",
		"15k FC, RAID 0, no cache; 8 KB random reads; two VMs on two hosts; latency at 32 total OIO, and the slope of a least-squares line of latency on OIO over 8-64 OIO (BASIL's P = 1/slope).",
		"disks", "IOPS @32", "ms @32", "slope ms/OIO", "P = 1/slope")
	for _, disks := range []int{4, 6, 8, 12, 16} {
		var oios, lats []float64
		var at32 physics.DatastoreStats
		for _, oio := range []float64{8, 16, 24, 32, 48, 64} {
			m, err := model(lab(scenario.Device{Kind: scenario.KindFC15k, Disks: disks, RAID: "0"}, 2, oio, 8, 100, 100))
			if err != nil {
				return err
			}
			ds := settle(m, 1).Datastores["ds"]
			oios, lats = append(oios, oio), append(lats, ds.AvgLatencyMs)
			if oio == 32 {
				at32 = ds
			}
		}
		b := slope(oios, lats)
		row(w, disks, at32.ReadIOPS, at32.AvgLatencyMs, b, 1/b)
	}
	return w.Flush()
}

func deviceKinds(out io.Writer) error {
	w := table(out, "FC against SATA against SSD (BASIL Fig. 7 set-up)",
		"7 devices, RAID 6, 512 MB cache; 16 KB, 80 % read, 70 % random; two VMs on two hosts; read latency (ms) by total OIO and its slope over 4-64 OIO. The paper measured slopes of 1.13 (FC) and 3.5 (SATA) on a NetApp FAS-3140.",
		"device", "OIO 4", "OIO 8", "OIO 16", "OIO 32", "OIO 64", "slope", "IOPS @32")
	for _, kind := range []string{scenario.KindSSD, scenario.KindFC15k, scenario.KindSAS10k, scenario.KindSATA7k} {
		cells := []any{kind}
		var oios, lats []float64
		iops32 := 0.0
		for _, oio := range []float64{4, 8, 16, 32, 64} {
			m, err := model(lab(scenario.Device{Kind: kind, Disks: 7, RAID: "6", CacheMB: 512}, 2, oio, 16, 80, 70))
			if err != nil {
				return err
			}
			ds := settle(m, 30).Datastores["ds"]
			cells = append(cells, ds.ReadLatencyMs)
			oios, lats = append(oios, oio), append(lats, ds.ReadLatencyMs)
			if oio == 32 {
				iops32 = ds.ReadIOPS + ds.WriteIOPS
			}
		}
		row(w, append(cells, slope(oios, lats), iops32)...)
	}
	return w.Flush()
}

func cacheOverTime(out io.Writer) error {
	s := lab(scenario.Device{Kind: scenario.KindSATA7k, Disks: 6, RAID: "6", CacheMB: 256}, 1, 16, 16, 30, 100)
	s.VMs[0].Disks[0].Workload.OIO = scenario.OIO{Schedule: []scenario.ScheduleStep{
		{At: scenario.Duration{}, Value: 16}, {At: scenario.Duration{Duration: 10 * time.Minute}, Value: 0},
	}}
	m, err := model(s)
	if err != nil {
		return err
	}
	w := table(out, "The write-back cache over time",
		"6 x 7.2k SATA, RAID 6, 256 MB cache; one VM, 16 OIO of 16 KB random IO, 30 % read, for 10 minutes, then idle.",
		"minute", "IOPS", "read ms", "write ms", "backlog MB", "full")
	for i := 1; i <= 45; i++ {
		iv := m.Step(start.Add(time.Duration(i)*step), step)
		if i%3 != 0 {
			continue
		}
		ds := iv.Datastores["ds"]
		row(w, float64(i)/3, ds.ReadIOPS+ds.WriteIOPS, ds.ReadLatencyMs, ds.WriteLatencyMs, ds.CacheDirtyMB, ds.CacheFull)
	}
	return w.Flush()
}

func siocEnforcement(out io.Writer) error {
	alloc := []struct {
		name    string
		host    string
		res     int64
		limit   int64
		shares  int32
		comment string
	}{
		{"big", "esx-01", 0, -1, 4000, "4000 shares"},
		{"small", "esx-02", 0, -1, 1000, "1000 shares, other host"},
		{"reserved", "esx-01", 400, -1, 500, "reservation 400, 500 shares"},
		{"limited", "esx-02", 0, 150, 1000, "limit 150"},
	}
	w := table(out, "SIOC under contention",
		"6 x 15k FC, RAID 5; four VMs, 32 OIO each of 8 KB random reads; IOPS without SIOC and with SIOC at a 20 ms threshold.",
		"disk", "allocation", "IOPS (off)", "ms (off)", "IOPS (SIOC)", "ms (SIOC)")
	results := map[bool]*physics.Interval{}
	for _, on := range []bool{false, true} {
		s := lab(scenario.Device{Kind: scenario.KindFC15k, Disks: 6, RAID: "5"}, 4, 128, 8, 100, 100)
		for i, a := range alloc {
			s.VMs[i].Name, s.VMs[i].Host = a.name, a.host
			limit := a.limit
			s.VMs[i].Disks[0].IO = scenario.IOAlloc{Reservation: a.res, Limit: &limit, Shares: scenario.Shares{Level: "custom", Value: a.shares}}
		}
		if on {
			s.Datastores[0].SIOC = scenario.SIOC{Enabled: true, ThresholdMs: 20}
		}
		m, err := model(s)
		if err != nil {
			return err
		}
		results[on] = settle(m, 2)
	}
	for _, a := range alloc {
		k := physics.DiskKey{VM: a.name, Unit: "scsi0:1"}
		off, on := results[false].Disks[k].True, results[true].Disks[k].True
		row(w, a.name, a.comment, off.ReadIOPS, off.ReadLatencyMs, on.ReadIOPS, on.ReadLatencyMs)
	}
	off, on := results[false].Datastores["ds"], results[true].Datastores["ds"]
	row(w, "datastore", "device latency", off.ReadIOPS, off.DeviceLatencyMs, on.ReadIOPS, on.DeviceLatencyMs)
	return w.Flush()
}

func littlesLaw(out io.Writer, file string) error {
	s, err := scenario.Load(file)
	if err != nil {
		return err
	}
	m, err := physics.New(s)
	if err != nil {
		return err
	}
	m.SetStart(start)
	iv := settle(m, 30)
	w := table(out, "Little's law per disk: throughput x latency = outstanding IOs",
		fmt.Sprintf("%s, interval ending at minute 10. True figures are exact; Measured ones carry the scenario's sampling noise.", s.Name),
		"disk", "true IOPS", "true ms", "IOPS x ms", "true OIO", "measured IOPS", "measured ms", "measured IOPS x ms")
	keys := sortedKeys(iv.Disks)
	for _, k := range keys {
		d := iv.Disks[k]
		t, ms := d.True, d.Measured
		if t.ReadIOPS+t.WriteIOPS == 0 {
			continue
		}
		iops := t.ReadIOPS + t.WriteIOPS
		lat := (t.ReadIOPS*t.ReadLatencyMs + t.WriteIOPS*t.WriteLatencyMs) / iops
		miops := ms.ReadIOPS + ms.WriteIOPS
		mlat := (ms.ReadIOPS*ms.ReadLatencyMs + ms.WriteIOPS*ms.WriteLatencyMs) / miops
		row(w, k.VM+"/"+k.Unit, iops, lat, iops*lat/1000, t.ReadOIO+t.WriteOIO, miops, mlat, miops*mlat/1000)
	}
	return w.Flush()
}

func sortedKeys(m map[physics.DiskKey]physics.DiskStats) []physics.DiskKey {
	keys := make([]physics.DiskKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].VM != keys[j].VM {
			return keys[i].VM < keys[j].VM
		}
		return keys[i].Unit < keys[j].Unit
	})
	return keys
}

// averages over a run: per datastore and per disk, IOPS and IOPS-weighted latency.
type averages struct {
	stores map[string]*acc
	disks  map[physics.DiskKey]*acc
	total  acc
}

type acc struct{ iops, latSum, readLatSum, readIOPS, oio float64 }

func (a *acc) latency() float64 { return safeDiv(a.latSum, a.iops) }

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func average(s *scenario.Scenario, intervals int) (*averages, error) {
	m, err := physics.New(s)
	if err != nil {
		return nil, err
	}
	m.SetStart(start)
	avg := &averages{stores: map[string]*acc{}, disks: map[physics.DiskKey]*acc{}}
	n := float64(intervals)
	for i := 1; i <= intervals; i++ {
		iv := m.Step(start.Add(time.Duration(i)*step), step)
		for name, ds := range iv.Datastores {
			a := avg.stores[name]
			if a == nil {
				a = &acc{}
				avg.stores[name] = a
			}
			iops := ds.ReadIOPS + ds.WriteIOPS
			a.iops += iops / n
			a.latSum += iops * ds.AvgLatencyMs / n
			a.readIOPS += ds.ReadIOPS / n
			a.readLatSum += ds.ReadIOPS * ds.ReadLatencyMs / n
			a.oio += ds.TotalOIO / n
		}
		for k, d := range iv.Disks {
			a := avg.disks[k]
			if a == nil {
				a = &acc{}
				avg.disks[k] = a
			}
			t := d.True
			a.iops += (t.ReadIOPS + t.WriteIOPS) / n
			a.latSum += (t.ReadIOPS*t.ReadLatencyMs + t.WriteIOPS*t.WriteLatencyMs) / n
			a.oio += (t.ReadOIO + t.WriteOIO) / n
		}
		avg.total.iops += iv.TotalIOPS / n
		avg.total.latSum += iv.TotalIOPS * iv.AvgLatencyMs / n
	}
	return avg, nil
}

func printScenario(out io.Writer, name string, avg *averages) {
	w := table(out, "Scenario "+name, "Averages over the run (IOPS-weighted latencies, true figures).",
		"datastore", "IOPS", "avg ms", "read ms", "mean OIO")
	names := make([]string, 0, len(avg.stores))
	for n := range avg.stores {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := avg.stores[n]
		row(w, n, a.iops, a.latency(), safeDiv(a.readLatSum, a.readIOPS), a.oio)
	}
	row(w, "total", avg.total.iops, avg.total.latency(), "", "")
	_ = w.Flush()
	w = table(out, "Disks of "+name, "", "disk", "IOPS", "avg ms", "mean OIO")
	keys := make([]physics.DiskKey, 0, len(avg.disks))
	for k, a := range avg.disks {
		if a.iops > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].VM+keys[i].Unit < keys[j].VM+keys[j].Unit })
	for _, k := range keys {
		a := avg.disks[k]
		row(w, k.VM+"/"+k.Unit, a.iops, a.latency(), a.oio)
	}
	_ = w.Flush()
}

// paperRow is a datastore's "before" figures in a BASIL table.
type paperRow struct {
	store string
	ms    float64
	iops  float64
}

func calibration(out io.Writer, dir string, intervals int) error {
	const littleNote = " The paper's rows are not Little-consistent with its own OIO column (Table 2: 29 OIO at 34 ms allow at most 853 IOPS on the 3-disk LUN, it reports 1263), and the lab draws each workload's OIO over Table 1's whole range, so the lab cannot match both columns at once."
	sets := []struct {
		file, title, note string
		rows              []paperRow
		total             paperRow
	}{
		{"basil-6.2.yaml", "basil-6.2 against BASIL Tables 2-3 (before BASIL)", littleNote,
			[]paperRow{{"3diskLUN", 34, 1263}, {"6diskLUN", 10, 2255}, {"9diskLUN", 4, 654}}, paperRow{"total", 16.7, 4172}},
		{"basil-6.3.yaml", "basil-6.3 against BASIL Tables 4-5 (before BASIL)", littleNote,
			[]paperRow{{"6diskLUN", 51, 1696}}, paperRow{"total", 51.6, 1696}},
		{"enterprise.yaml", "enterprise against BASIL Table 9 (space-balanced placement)",
			" Table 9 implies 8, 16 and 18.5 mean OIO by Little's law; the lab's bursty workloads match Table 6's 90th percentiles instead.",
			[]paperRow{{"EMC", 9.6, 836}, {"NetApp-SP", 29, 551}, {"NetApp-DP", 45, 412}}, paperRow{"total", 23.6, 1799}},
	}
	for _, set := range sets {
		s, err := scenario.Load(filepath.Join(dir, set.file))
		if err != nil {
			return err
		}
		avg, err := average(s, intervals)
		if err != nil {
			return err
		}
		w := table(out, set.title,
			fmt.Sprintf("Lab: averages over %d minutes of simulated time. Paper: the measured figures.%s", intervals/3, set.note),
			"datastore", "lab ms", "paper ms", "lab IOPS", "paper IOPS", "lab mean OIO")
		for _, r := range set.rows {
			a := avg.stores[r.store]
			if a == nil {
				return fmt.Errorf("%s has no datastore %q", set.file, r.store)
			}
			row(w, r.store, a.latency(), r.ms, a.iops, r.iops, a.oio)
		}
		oio := 0.0
		for _, r := range set.rows {
			oio += avg.stores[r.store].oio
		}
		tot := &acc{}
		for _, r := range set.rows {
			a := avg.stores[r.store]
			tot.iops += a.iops
			tot.latSum += a.latSum
		}
		row(w, "weighted / total", tot.latency(), set.total.ms, tot.iops, set.total.iops, oio)
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return nil
}
