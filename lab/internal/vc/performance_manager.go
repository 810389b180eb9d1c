package vc

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vim25/xml"
)

// PerformanceManager is the lab's performance manager: for the scenario's VMs (virtualDisk.* per
// disk instance "scsi0:1") and hosts (datastore.* per datastore volume UUID) it answers from the
// physics' measured figures, one sample per 20 s of simulated time, one hour kept. Other entities
// and counters are the simulator's.
type PerformanceManager struct {
	*simulator.PerformanceManager
	lab *Lab
}

// Lock and Unlock opt out of the simulator's per-object lock: queries only read the sample ring,
// which has its own lock, and collectors query concurrently.
func (p *PerformanceManager) Lock()   {}
func (p *PerformanceManager) Unlock() {}

// historicalIntervals are vCenter's default statistics intervals (sampling periods in seconds).
var historicalIntervals = map[int32]bool{300: true, 1800: true, 7200: true, 86400: true}

// metric is one resolved (counter, instance) of an entity, and where its values are in a sample.
type metric struct {
	id     types.PerfMetricId
	offset int // index into sample.disk or sample.pair, or -1 for datastore.maxTotalLatency
	host   int // for maxTotalLatency
	inDisk bool
}

// entityMetrics lists every metric the lab serves for a VM or host of the scenario, and false for
// other entities.
func (l *Lab) entityMetrics(ref types.ManagedObjectReference) ([]metric, bool) {
	switch ref.Type {
	case "VirtualMachine":
		v, ok := l.inv.vmByRef[ref.Value]
		if !ok {
			return nil, false
		}
		out := make([]metric, 0, len(v.disks)*len(diskCounters))
		for _, d := range v.disks {
			for c, dc := range diskCounters {
				out = append(out, metric{
					id:     types.PerfMetricId{CounterId: dc.key, Instance: d.unit},
					offset: d.idx*len(diskCounters) + c, inDisk: true,
				})
			}
		}
		return out, true
	case "HostSystem":
		h, ok := l.inv.hostByRef[ref.Value]
		if !ok {
			return nil, false
		}
		out := make([]metric, 0, len(h.pairs)*len(hostCounters)+1)
		for _, pi := range h.pairs {
			inst := l.inv.pairs[pi].store.uuid
			for c, hc := range hostCounters {
				out = append(out, metric{
					id:     types.PerfMetricId{CounterId: hc.key, Instance: inst},
					offset: pi*len(hostCounters) + c,
				})
			}
		}
		out = append(out, metric{id: types.PerfMetricId{CounterId: maxTotalLatencyKey}, offset: -1, host: h.idx})
		return out, true
	}
	return nil, false
}

// QueryAvailablePerfMetric lists the metrics of a VM (per disk) or host (per datastore).
func (p *PerformanceManager) QueryAvailablePerfMetric(ctx *simulator.Context, req *types.QueryAvailablePerfMetric) soap.HasFault {
	if ctx.Map.Get(req.Entity) == nil {
		return &methods.QueryAvailablePerfMetricBody{Fault_: notFound(req.Entity)}
	}
	all, ok := p.lab.entityMetrics(req.Entity)
	if !ok {
		return p.PerformanceManager.QueryAvailablePerfMetric(ctx, req)
	}
	if req.IntervalId != 0 && req.IntervalId != 20 && !historicalIntervals[req.IntervalId] {
		return &methods.QueryAvailablePerfMetricBody{Fault_: invalidInterval("intervalId")}
	}
	res := &types.QueryAvailablePerfMetricResponse{Returnval: make([]types.PerfMetricId, len(all))}
	for i, m := range all {
		res.Returnval[i] = m.id
	}
	return &methods.QueryAvailablePerfMetricBody{Res: res}
}

// QueryPerfCounterByLevel returns the counters collected at a statistics level (1 to 4).
func (p *PerformanceManager) QueryPerfCounterByLevel(_ *simulator.Context, req *types.QueryPerfCounterByLevel) soap.HasFault {
	if req.Level < 1 || req.Level > 4 {
		return &methods.QueryPerfCounterByLevelBody{Fault_: simulator.Fault(
			"A specified parameter was not correct: level", &types.InvalidArgument{InvalidProperty: "level"})}
	}
	res := &types.QueryPerfCounterByLevelResponse{}
	for _, c := range p.PerfCounter {
		if c.Level <= req.Level {
			res.Returnval = append(res.Returnval, c)
		}
	}
	return &methods.QueryPerfCounterByLevelBody{Res: res}
}

func notFound(ref types.ManagedObjectReference) *soap.Fault {
	return simulator.Fault(fmt.Sprintf("The object 'vim.%s:%s' has already been deleted or has not been completely created", ref.Type, ref.Value),
		&types.ManagedObjectNotFound{Obj: ref})
}

func invalidInterval(field string) *soap.Fault {
	return simulator.Fault("A specified parameter was not correct: "+field, &types.InvalidArgument{InvalidProperty: field})
}

// maxQueryMetricsFault is what vCenter answers a query over config.vpxd.stats.maxQueryMetrics.
func maxQueryMetricsFault() *soap.Fault {
	return simulator.Fault("This operation is restricted by the administrator - 'vpxd.stats.maxQueryMetrics'. Contact your system administrator.",
		&types.RestrictedByAdministrator{Details: "vpxd.stats.maxQueryMetrics"})
}

// QueryPerf answers each query spec from the sample ring (VMs and hosts of the scenario) or the
// simulator (anything else). config.vpxd.stats.maxQueryMetrics caps the metrics (entity x counter
// x instance as asked) of the specs it applies to: historical ones, as vCenter does, and real-time
// ones too when the lab is told to.
func (p *PerformanceManager) QueryPerf(ctx *simulator.Context, req *types.QueryPerf) soap.HasFault {
	l := p.lab
	for i, qs := range req.QuerySpec {
		if _, ours := l.entityMetrics(qs.Entity); ours && !isRealtime(qs.IntervalId) && !historicalIntervals[qs.IntervalId] {
			return &methods.QueryPerfBody{Fault_: invalidInterval(fmt.Sprintf("querySpec[%d].intervalId", i))}
		}
	}
	if limit := l.maxQueryMetrics.Load(); limit >= 0 {
		count := 0
		for _, qs := range req.QuerySpec {
			if !isRealtime(qs.IntervalId) || l.capRealtime.Load() {
				if n := len(qs.MetricId); n > 0 {
					count += n
				} else if all, ok := l.entityMetrics(qs.Entity); ok {
					count += len(all)
				}
			}
		}
		if int64(count) > limit {
			return &methods.QueryPerfBody{Fault_: maxQueryMetricsFault()}
		}
	}
	res := &types.QueryPerfResponse{Returnval: make([]types.BasePerfEntityMetricBase, 0, len(req.QuerySpec))}
	for i, qs := range req.QuerySpec {
		if ctx.Map.Get(qs.Entity) == nil {
			return &methods.QueryPerfBody{Fault_: notFound(qs.Entity)}
		}
		all, ok := l.entityMetrics(qs.Entity)
		if !ok {
			if qs.Entity.Type == "VirtualMachine" || qs.Entity.Type == "HostSystem" {
				// An entity the scenario does not know (created by a client): no samples.
				res.Returnval = append(res.Returnval, &types.PerfEntityMetric{PerfEntityMetricBase: types.PerfEntityMetricBase{Entity: qs.Entity}})
				continue
			}
			one := p.PerformanceManager.QueryPerf(ctx, &types.QueryPerf{This: req.This, QuerySpec: []types.PerfQuerySpec{qs}})
			if f := one.Fault(); f != nil {
				return &methods.QueryPerfBody{Fault_: f}
			}
			res.Returnval = append(res.Returnval, one.(*methods.QueryPerfBody).Res.Returnval...)
			continue
		}
		if !isRealtime(qs.IntervalId) && !historicalIntervals[qs.IntervalId] {
			return &methods.QueryPerfBody{Fault_: invalidInterval(fmt.Sprintf("querySpec[%d].intervalId", i))}
		}
		if qs.Format != "" && qs.Format != string(types.PerfFormatNormal) && qs.Format != string(types.PerfFormatCsv) {
			return &methods.QueryPerfBody{Fault_: invalidInterval(fmt.Sprintf("querySpec[%d].format", i))}
		}
		res.Returnval = append(res.Returnval, l.entityPerf(qs, selectMetrics(all, qs.MetricId)))
	}
	return &methods.QueryPerfBody{Res: res}
}

func isRealtime(interval int32) bool { return interval == 0 || interval == 20 }

// selectMetrics resolves the asked metric ids against an entity's metrics: instance "*" means
// every instance, "" the aggregate; ids the entity does not have are left out, as vCenter does.
func selectMetrics(all []metric, asked []types.PerfMetricId) []metric {
	if len(asked) == 0 {
		return all
	}
	var out []metric
	for _, a := range asked {
		for _, m := range all {
			if m.id.CounterId == a.CounterId && (a.Instance == "*" || a.Instance == m.id.Instance) {
				out = append(out, m)
			}
		}
	}
	return out
}

// entityPerf builds one entity's series from the ring.
func (l *Lab) entityPerf(qs types.PerfQuerySpec, metrics []metric) types.BasePerfEntityMetricBase {
	interval := qs.IntervalId
	if interval == 0 {
		interval = int32(IntervalLength / time.Second)
	}
	var after, until time.Time
	if qs.StartTime != nil {
		after = *qs.StartTime
	}
	if qs.EndTime != nil {
		until = *qs.EndTime
	}
	p := l.perf
	p.mu.RLock()
	defer p.mu.RUnlock()
	ends, values := l.series(metrics, interval, after, until)
	if qs.MaxSample > 0 && len(ends) > int(qs.MaxSample) {
		cut := len(ends) - int(qs.MaxSample)
		ends = ends[cut:]
		for i := range values {
			values[i] = values[i][cut:]
		}
	}
	if qs.Format == string(types.PerfFormatCsv) {
		out := &types.PerfEntityMetricCSV{PerfEntityMetricBase: types.PerfEntityMetricBase{Entity: qs.Entity}}
		info := make([]string, 0, 2*len(ends))
		for _, t := range ends {
			info = append(info, strconv.Itoa(int(interval)), t.UTC().Format(time.RFC3339))
		}
		out.SampleInfoCSV = strings.Join(info, ",")
		for i, m := range metrics {
			vals := make([]string, len(values[i]))
			for j, v := range values[i] {
				vals[j] = strconv.FormatInt(v, 10)
			}
			out.Value = append(out.Value, types.PerfMetricSeriesCSV{PerfMetricSeries: types.PerfMetricSeries{Id: m.id}, Value: strings.Join(vals, ",")})
		}
		return out
	}
	out := &types.PerfEntityMetric{PerfEntityMetricBase: types.PerfEntityMetricBase{Entity: qs.Entity}}
	for _, t := range ends {
		out.SampleInfo = append(out.SampleInfo, types.PerfSampleInfo{Timestamp: t.UTC(), Interval: interval})
	}
	for i, m := range metrics {
		out.Value = append(out.Value, &PerfMetricIntSeries{types.PerfMetricIntSeries{PerfMetricSeries: types.PerfMetricSeries{Id: m.id}, Value: values[i]}})
	}
	return out
}

// series returns the sample ends in (after, until] and each metric's values, at the real-time
// interval or rolled up to a historical one (averages over complete periods; the maximum for
// maxTotalLatency). The caller holds the ring's read lock.
func (l *Lab) series(metrics []metric, interval int32, after, until time.Time) ([]time.Time, [][]int64) {
	p := l.perf
	value := func(s *sample, m metric) int64 {
		switch {
		case m.offset < 0:
			return int64(s.hostMax[m.host])
		case m.inDisk:
			return int64(s.disk[m.offset])
		default:
			return int64(s.pair[m.offset])
		}
	}
	values := make([][]int64, len(metrics))
	if isRealtime(interval) {
		samples := p.window(after, until)
		ends := make([]time.Time, len(samples))
		for j, s := range samples {
			ends[j] = s.end
		}
		for i, m := range metrics {
			values[i] = make([]int64, len(samples))
			for j, s := range samples {
				values[i][j] = value(s, m)
			}
		}
		return ends, values
	}
	period := time.Duration(interval) * time.Second
	all := p.window(time.Time{}, time.Time{})
	if len(all) == 0 {
		return nil, values
	}
	latest := all[len(all)-1].end
	type bucket struct {
		end     time.Time
		samples []*sample
	}
	var buckets []bucket
	for _, s := range all {
		end := s.end.Truncate(period)
		if !end.Equal(s.end) {
			end = end.Add(period)
		}
		if end.After(latest) {
			break // the period is not over yet
		}
		if (!after.IsZero() && !end.After(after)) || (!until.IsZero() && end.After(until)) {
			continue
		}
		if n := len(buckets); n == 0 || !buckets[n-1].end.Equal(end) {
			buckets = append(buckets, bucket{end: end})
		}
		buckets[len(buckets)-1].samples = append(buckets[len(buckets)-1].samples, s)
	}
	ends := make([]time.Time, len(buckets))
	for j, b := range buckets {
		ends[j] = b.end
	}
	for i, m := range metrics {
		values[i] = make([]int64, len(buckets))
		for j, b := range buckets {
			var sum, hi int64
			for _, s := range b.samples {
				v := value(s, m)
				sum += v
				if v > hi {
					hi = v
				}
			}
			if m.offset < 0 {
				values[i][j] = hi
			} else {
				values[i][j] = int64(math.Round(float64(sum) / float64(len(b.samples))))
			}
		}
	}
	return ends, values
}

// PerfMetricIntSeries is a series of counter values that goes over the wire with every value,
// zeros included: the xml package omits the zero elements of a slice tagged omitempty, which would
// shift a series' values against its sample times. Its name is its xsi:type.
type PerfMetricIntSeries struct{ types.PerfMetricIntSeries }

// MarshalXML writes the series id and each value.
func (s PerfMetricIntSeries) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if err := e.EncodeToken(start); err != nil {
		return err
	}
	if err := e.EncodeElement(s.Id, xml.StartElement{Name: xml.Name{Local: "id"}}); err != nil {
		return err
	}
	value := xml.StartElement{Name: xml.Name{Local: "value"}}
	for _, v := range s.Value {
		if err := e.EncodeElement(v, value); err != nil {
			return err
		}
	}
	return e.EncodeToken(start.End())
}
