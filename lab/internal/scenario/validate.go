package scenario

import (
	"fmt"
	"math"
	"regexp"
)

var unitPattern = regexp.MustCompile(`^(scsi|sata|nvme|ide)([0-9]):([0-9]{1,2})$`)

var raidLevels = map[string]bool{"0": true, "1": true, "5": true, "6": true, "10": true}

var deviceKinds = map[string]bool{KindSSD: true, KindFC15k: true, KindSAS10k: true, KindSATA7k: true, KindCustom: true}

type validator struct{ problems []Problem }

func (v *validator) add(line int, field, format string, args ...any) {
	v.problems = append(v.problems, Problem{Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Validate fills defaults and reports every problem of a decoded scenario, each with its line.
func Validate(s *Scenario) []Problem {
	v := &validator{}
	if s.Name == "" {
		v.add(s.Line(), "name", "is required")
	}
	if s.Datacenter == "" {
		s.Datacenter = "DC0"
	}
	if s.Settings.MaxQueryMetrics == 0 {
		s.Settings.MaxQueryMetrics = 256
	}
	if s.Settings.LUNQueueDepth == 0 {
		s.Settings.LUNQueueDepth = 32
	}
	if s.Settings.LUNQueueDepth < 1 || s.Settings.LUNQueueDepth > 1024 {
		v.add(s.Settings.Line("lun_queue_depth"), "settings.lun_queue_depth", "must be between 1 and 1024")
	}
	if s.Settings.NoisePct != nil && (!finite(*s.Settings.NoisePct) || *s.Settings.NoisePct < 0 || *s.Settings.NoisePct > 50) {
		v.add(s.Settings.Line("noise_pct"), "settings.noise_pct", "must be between 0 and 50")
	}

	hosts := v.hosts(s)
	if len(hosts) == 0 {
		v.add(s.Line(), "hosts", "a scenario needs at least one host (in hosts or clusters)")
	}
	datastores := v.datastores(s, hosts)
	v.vms(s, hosts, datastores)
	return v.problems
}

// hosts merges hosts listed under clusters into Hosts and returns the set of host names.
func (v *validator) hosts(s *Scenario) map[string]*Host {
	byName := map[string]*Host{}
	clusters := map[string]bool{}
	for i := range s.Hosts {
		h := &s.Hosts[i]
		field := fmt.Sprintf("hosts[%d]", i)
		if h.Name == "" {
			v.add(h.Line(), field+".name", "is required")
			continue
		}
		if _, dup := byName[h.Name]; dup {
			v.add(h.Line("name"), field+".name", "duplicate host %q", h.Name)
			continue
		}
		byName[h.Name] = h
	}
	for ci := range s.Clusters {
		c := &s.Clusters[ci]
		field := fmt.Sprintf("clusters[%d]", ci)
		if c.Name == "" {
			v.add(c.Line(), field+".name", "is required")
			continue
		}
		if clusters[c.Name] {
			v.add(c.Line("name"), field+".name", "duplicate cluster %q", c.Name)
		}
		clusters[c.Name] = true
		for _, name := range c.Hosts {
			if h, ok := byName[name]; ok {
				if h.Cluster != "" && h.Cluster != c.Name {
					v.add(c.Line("hosts"), field+".hosts", "host %q is already in cluster %q", name, h.Cluster)
				}
				h.Cluster = c.Name
				continue
			}
			s.Hosts = append(s.Hosts, Host{Name: name, Cluster: c.Name, pos: pos{line: c.Line("hosts")}})
			byName[name] = nil // re-pointed below, the slice may have moved
		}
	}
	for i := range s.Hosts {
		h := &s.Hosts[i]
		byName[h.Name] = h
		if h.Cluster != "" && !clusters[h.Cluster] {
			s.Clusters = append(s.Clusters, Cluster{Name: h.Cluster, pos: pos{line: h.Line("cluster")}})
			clusters[h.Cluster] = true
		}
	}
	for ci := range s.Clusters {
		c := &s.Clusters[ci]
		c.Hosts = c.Hosts[:0:0]
		for _, h := range s.Hosts {
			if h.Cluster == c.Name {
				c.Hosts = append(c.Hosts, h.Name)
			}
		}
	}
	return byName
}

func (v *validator) datastores(s *Scenario, hosts map[string]*Host) map[string]*Datastore {
	byName := map[string]*Datastore{}
	for i := range s.Datastores {
		d := &s.Datastores[i]
		field := fmt.Sprintf("datastores[%d]", i)
		if d.Name == "" {
			v.add(d.Line(), field+".name", "is required")
		} else if _, dup := byName[d.Name]; dup {
			v.add(d.Line("name"), field+".name", "duplicate datastore %q", d.Name)
		} else {
			byName[d.Name] = d
		}
		if !finite(d.CapacityGB) || d.CapacityGB <= 0 {
			v.add(d.Line("capacity_gb"), field+".capacity_gb", "must be a positive number of GB")
		}
		if !finite(d.UsedGB) || d.UsedGB < 0 || d.UsedGB > d.CapacityGB {
			v.add(d.Line("used_gb"), field+".used_gb", "must be between 0 and capacity_gb")
		}
		switch d.Type {
		case "":
			d.Type = "VMFS"
		case "VMFS", "NFS", "NFS41", "vsan", "VVOL":
		default:
			v.add(d.Line("type"), field+".type", "unknown datastore type %q (VMFS, NFS, NFS41, vsan, VVOL)", d.Type)
		}
		if len(d.Hosts) == 0 {
			for _, h := range s.Hosts {
				d.Hosts = append(d.Hosts, h.Name)
			}
		}
		for _, h := range d.Hosts {
			if _, ok := hosts[h]; !ok {
				v.add(d.Line("hosts"), field+".hosts", "unknown host %q", h)
			}
		}
		v.device(&d.Device, field+".device")
		v.sioc(&d.SIOC, field+".sioc")
	}
	return byName
}

func (v *validator) device(d *Device, field string) {
	if d.Kind == "" {
		v.add(d.Line(), field+".kind", "is required (%s, %s, %s, %s or %s)", KindSSD, KindFC15k, KindSAS10k, KindSATA7k, KindCustom)
	} else if !deviceKinds[d.Kind] {
		v.add(d.Line("kind"), field+".kind", "unknown device kind %q (%s, %s, %s, %s or %s)", d.Kind, KindSSD, KindFC15k, KindSAS10k, KindSATA7k, KindCustom)
	}
	if d.Disks <= 0 {
		v.add(d.Line("disks"), field+".disks", "must be a positive number of devices")
	}
	if d.RAID == "" {
		d.RAID = "5"
	} else if !raidLevels[d.RAID] {
		v.add(d.Line("raid"), field+".raid", "unknown RAID level %q (0, 1, 5, 6 or 10)", d.RAID)
	}
	minDisks := map[string]int{"0": 1, "1": 2, "5": 3, "6": 4, "10": 4}[d.RAID]
	if d.Disks > 0 && minDisks > 0 && d.Disks < minDisks {
		v.add(d.Line("disks"), field+".disks", "RAID %s needs at least %d devices, got %d", d.RAID, minDisks, d.Disks)
	}
	if !finite(d.CacheMB) || d.CacheMB < 0 {
		v.add(d.Line("cache_mb"), field+".cache_mb", "must be zero or a positive number of MB")
	}
	if d.Kind == KindCustom && d.Service == nil {
		v.add(d.Line(), field+".service", "a custom device needs its service parameters")
	}
	if sp := d.Service; sp != nil {
		for name, x := range map[string]float64{
			"avg_seek_ms": sp.AvgSeekMs, "rpm": sp.RPM, "transfer_mb_s": sp.TransferMBps, "read_us": sp.ReadUs,
			"write_us": sp.WriteUs, "destage_mb_s": sp.DestageMBps, "controller_us": sp.ControllerUs,
			"stripe_kb": sp.StripeKB,
		} {
			if !finite(x) || x < 0 {
				v.add(sp.Line(name), field+".service."+name, "must be zero (the kind's default) or positive")
			}
		}
		if sp.Channels < 0 || sp.Channels > 64 {
			v.add(sp.Line("channels"), field+".service.channels", "must be between 1 and 64 (0 for the default)")
		}
		if d.Kind == KindCustom && sp.TransferMBps <= 0 {
			v.add(sp.Line("transfer_mb_s"), field+".service.transfer_mb_s", "is required for a custom device")
		}
		if d.Kind == KindCustom && sp.RPM == 0 && sp.ReadUs <= 0 {
			v.add(sp.Line(), field+".service", "a custom device needs rpm and avg_seek_ms (spindles) or read_us (flash)")
		}
	}
}

func (v *validator) sioc(s *SIOC, field string) {
	switch s.ThresholdMode {
	case "":
		s.ThresholdMode = "manual"
	case "manual", "automatic":
	default:
		v.add(s.Line("threshold_mode"), field+".threshold_mode", "must be manual or automatic")
	}
	if s.ThresholdMs == 0 {
		s.ThresholdMs = 30
	}
	// vSphere accepts a manual congestion threshold of 5 to 100 ms.
	if !finite(s.ThresholdMs) || s.ThresholdMs < 5 || s.ThresholdMs > 100 {
		v.add(s.Line("threshold_ms"), field+".threshold_ms", "must be between 5 and 100 ms")
	}
	if s.PeakPct == 0 {
		s.PeakPct = 90
	}
	if !finite(s.PeakPct) || s.PeakPct < 50 || s.PeakPct > 100 {
		v.add(s.Line("peak_pct"), field+".peak_pct", "must be between 50 and 100")
	}
}

func (v *validator) vms(s *Scenario, hosts map[string]*Host, datastores map[string]*Datastore) {
	names := map[string]bool{}
	for i := range s.VMs {
		vm := &s.VMs[i]
		field := fmt.Sprintf("vms[%d]", i)
		if vm.Name == "" {
			v.add(vm.Line(), field+".name", "is required")
		} else if names[vm.Name] {
			v.add(vm.Line("name"), field+".name", "duplicate VM %q", vm.Name)
		}
		names[vm.Name] = true
		if _, ok := hosts[vm.Host]; !ok {
			if vm.Host == "" {
				v.add(vm.Line(), field+".host", "is required")
			} else {
				v.add(vm.Line("host"), field+".host", "unknown host %q", vm.Host)
			}
		}
		units := map[string]bool{}
		for j := range vm.Disks {
			d := &vm.Disks[j]
			df := fmt.Sprintf("%s.disks[%d]", field, j)
			if !unitPattern.MatchString(d.Unit) {
				v.add(d.Line("unit"), df+".unit", "must be a controller and unit like scsi0:1, got %q", d.Unit)
			} else if units[d.Unit] {
				v.add(d.Line("unit"), df+".unit", "duplicate unit %q in VM %q", d.Unit, vm.Name)
			} else if _, n := d.Controller(); n == 7 && d.Unit[:4] == "scsi" {
				v.add(d.Line("unit"), df+".unit", "SCSI unit 7 is reserved for the controller")
			}
			units[d.Unit] = true
			if !finite(d.SizeGB) || d.SizeGB <= 0 {
				v.add(d.Line("size_gb"), df+".size_gb", "must be a positive number of GB")
			}
			ds, ok := datastores[d.Datastore]
			switch {
			case d.Datastore == "":
				v.add(d.Line(), df+".datastore", "is required")
			case !ok:
				v.add(d.Line("datastore"), df+".datastore", "unknown datastore %q", d.Datastore)
			case !contains(ds.Hosts, vm.Host):
				v.add(d.Line("datastore"), df+".datastore", "datastore %q is not mounted on the VM's host %q", d.Datastore, vm.Host)
			}
			v.ioAlloc(&d.IO, df+".io")
			if d.Workload != nil {
				v.workload(d.Workload, df+".workload")
			}
		}
	}
	// Space: the disks placed on a datastore must fit (thin disks count their full size, as
	// Storage vMotion would need it; the lab keeps it simple and conservative).
	used := map[string]float64{}
	for _, vm := range s.VMs {
		for _, d := range vm.Disks {
			used[d.Datastore] += d.SizeGB
		}
	}
	for i, d := range s.Datastores {
		if need := used[d.Name] + d.UsedGB; d.CapacityGB > 0 && need > d.CapacityGB {
			v.add(d.Line("capacity_gb"), fmt.Sprintf("datastores[%d].capacity_gb", i), "%.0f GB of disks and used space do not fit in %.0f GB", need, d.CapacityGB)
		}
	}
}

func (v *validator) ioAlloc(a *IOAlloc, field string) {
	if a.Reservation < 0 {
		v.add(a.Line("reservation"), field+".reservation", "must be zero or a positive number of IOPS")
	}
	if a.Limit != nil && *a.Limit != -1 && *a.Limit <= 0 {
		v.add(a.Line("limit"), field+".limit", "must be a positive number of IOPS, or -1 for unlimited")
	}
	if a.Limit != nil && *a.Limit > 0 && a.Reservation > *a.Limit {
		v.add(a.Line("reservation"), field+".reservation", "reservation %d is above the limit %d", a.Reservation, *a.Limit)
	}
	if a.Shares.Level == "custom" && (a.Shares.Value < 1 || a.Shares.Value > 1_000_000) {
		v.add(a.Shares.Line(), field+".shares", "custom shares must be between 1 and 1000000")
	}
}

func (v *validator) workload(w *Workload, field string) {
	v.oio(&w.OIO, field+".oio", w.Line("oio"), true)
	v.params(w.Line("io_size_kb"), w.Line("read_pct"), w.Line("random_pct"), field, &w.IOSizeKB, &w.ReadPct, &w.RandomPct, true)
	for i := range w.Phases {
		p := &w.Phases[i]
		pf := fmt.Sprintf("%s.phases[%d]", field, i)
		if p.Duration.Duration <= 0 {
			v.add(p.Line("duration"), pf+".duration", "must be a positive duration")
		}
		if p.OIO != nil {
			v.oio(p.OIO, pf+".oio", p.Line("oio"), false)
		}
		v.params(p.Line("io_size_kb"), p.Line("read_pct"), p.Line("random_pct"), pf, p.IOSizeKB, p.ReadPct, p.RandomPct, false)
	}
	if b := w.Burst; b != nil {
		bf := field + ".burst"
		switch b.Kind {
		case BurstOnOff:
			if b.On.Duration <= 0 || b.Off.Duration < 0 {
				v.add(b.Line(), bf, "onoff needs a positive on and a non-negative off duration")
			}
		case BurstDiurnal:
			if b.Period.Duration == 0 {
				b.Period.Duration = 24 * 3600 * 1e9
			}
			if b.Period.Duration < 0 || b.PeakAt.Duration < 0 || b.PeakAt.Duration >= b.Period.Duration {
				v.add(b.Line("peak_at"), bf+".peak_at", "must lie within the period")
			}
			if !finite(b.MinFactor) || b.MinFactor < 0 || b.MinFactor > 1 {
				v.add(b.Line("min_factor"), bf+".min_factor", "must be between 0 and 1")
			}
		default:
			v.add(b.Line("kind"), bf+".kind", "must be %s or %s", BurstOnOff, BurstDiurnal)
		}
	}
}

func (v *validator) oio(o *OIO, field string, line int, required bool) {
	switch o.Kind() {
	case "fixed":
		if !finite(o.Fixed) || o.Fixed < 0 || (required && o.Fixed == 0) {
			v.add(line, field, "must be a positive number of outstanding IOs")
		}
	case "range":
		if !finite(o.Min) || !finite(o.Max) || o.Min < 0 || o.Max < o.Min {
			v.add(line, field, "range needs 0 <= min <= max")
		}
		if o.Every.Duration == 0 {
			o.Every.Duration = 20 * 1e9
		}
	case "schedule":
		for i, st := range o.Schedule {
			if !finite(st.Value) || st.Value < 0 {
				v.add(st.Line("value"), fmt.Sprintf("%s.schedule[%d].value", field, i), "must be zero or a positive number of outstanding IOs")
			}
			if i > 0 && st.At.Duration <= o.Schedule[i-1].At.Duration {
				v.add(st.Line("at"), fmt.Sprintf("%s.schedule[%d].at", field, i), "schedule steps must be in increasing time order")
			}
		}
		if o.Repeat.Duration < 0 || (o.Repeat.Duration > 0 && o.Repeat.Duration <= o.Schedule[len(o.Schedule)-1].At.Duration) {
			v.add(line, field+".repeat", "must be longer than the last schedule step")
		}
	}
}

func (v *validator) params(sizeLine, readLine, randLine int, field string, size, read, random *float64, required bool) {
	if size != nil {
		if !finite(*size) || *size <= 0 || *size > 4096 {
			if *size != 0 || required {
				v.add(sizeLine, field+".io_size_kb", "must be between 0.5 and 4096 KB")
			}
		}
	}
	for _, pct := range []struct {
		name string
		line int
		p    *float64
	}{{"read_pct", readLine, read}, {"random_pct", randLine, random}} {
		if pct.p != nil && (!finite(*pct.p) || *pct.p < 0 || *pct.p > 100) {
			v.add(pct.line, field+"."+pct.name, "must be between 0 and 100")
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
