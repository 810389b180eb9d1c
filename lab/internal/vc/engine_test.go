package vc

import (
	"context"
	"testing"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/performance"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/types"
)

func TestStepSolvesIntervalsOnTheClock(t *testing.T) {
	tl := newTestLab(t, testScenario)
	ctx := context.Background()
	now, err := methods.GetCurrentTime(ctx, tl.c.Client)
	if err != nil {
		t.Fatal(err)
	}
	if !now.Equal(testStart) {
		t.Fatalf("CurrentTime = %v, want the simulated start %v (the clock is paused)", now, testStart)
	}
	for _, tc := range []struct {
		steps   int
		samples int
	}{{1, 1}, {3, 4}, {10, 14}} {
		end, err := tl.StepIntervals(tc.steps)
		if err != nil {
			t.Fatal(err)
		}
		if end.Unix()%20 != 0 {
			t.Errorf("interval end %v is not on a 20 s boundary", end)
		}
		m := performance.NewManager(tl.c.Client)
		res, err := m.Query(ctx, []types.PerfQuerySpec{{
			Entity: tl.vm(t, "vm-1").Reference(), IntervalId: 20,
			MetricId: []types.PerfMetricId{{CounterId: 171, Instance: "scsi0:0"}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		info := res[0].(*types.PerfEntityMetric).SampleInfo
		if len(info) != tc.samples {
			t.Fatalf("after %d more steps: %d samples, want %d", tc.steps, len(info), tc.samples)
		}
		if last := info[len(info)-1].Timestamp; !last.Equal(end) {
			t.Errorf("last sample at %v, want the interval end %v", last, end)
		}
	}
	if _, err := tl.StepIntervals(0); err == nil {
		t.Error("a step of 0 intervals was accepted")
	}
}

func TestQueryPerfWindow(t *testing.T) {
	tl := newTestLab(t, testScenario)
	ctx := context.Background()
	tl.step(t, 6)
	m := performance.NewManager(tl.c.Client)
	var ends []time.Time
	res, err := m.Query(ctx, []types.PerfQuerySpec{{Entity: tl.vm(t, "vm-1").Reference(), IntervalId: 20,
		MetricId: []types.PerfMetricId{{CounterId: 171, Instance: "*"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res[0].(*types.PerfEntityMetric).SampleInfo {
		ends = append(ends, s.Timestamp)
	}
	if len(ends) != 6 {
		t.Fatalf("%d samples, want 6", len(ends))
	}
	for _, tc := range []struct {
		name       string
		start, end *time.Time
		max        int32
		want       []time.Time
	}{
		{"maxSample keeps the most recent", nil, nil, 2, ends[4:]},
		{"startTime is exclusive", &ends[2], nil, 0, ends[3:]},
		{"endTime is inclusive", nil, &ends[1], 0, ends[:2]},
		{"window and maxSample", &ends[0], &ends[4], 2, ends[3:5]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := m.Query(ctx, []types.PerfQuerySpec{{Entity: tl.vm(t, "vm-1").Reference(), IntervalId: 20,
				StartTime: tc.start, EndTime: tc.end, MaxSample: tc.max,
				MetricId: []types.PerfMetricId{{CounterId: 171, Instance: "*"}}}})
			if err != nil {
				t.Fatal(err)
			}
			em := res[0].(*types.PerfEntityMetric)
			var got []time.Time
			for _, s := range em.SampleInfo {
				got = append(got, s.Timestamp)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("samples %v, want %v", got, tc.want)
			}
			for i := range got {
				if !got[i].Equal(tc.want[i]) {
					t.Fatalf("samples %v, want %v", got, tc.want)
				}
			}
			for _, v := range em.Value {
				if n := len(v.(*types.PerfMetricIntSeries).Value); n != len(tc.want) {
					t.Errorf("series %v has %d values for %d samples", v.GetPerfMetricSeries().Id, n, len(tc.want))
				}
			}
		})
	}
}

func TestMaxQueryMetrics(t *testing.T) {
	tl := newTestLab(t, testScenario)
	ctx := context.Background()
	tl.step(t, 15)
	m := performance.NewManager(tl.c.Client)
	vm := tl.vm(t, "vm-1").Reference()
	// vm-1 has 2 disks x 15 counters = 30 metrics; a limit of 20 is below.
	tl.SetMaxQueryMetrics(20)
	om := object.NewOptionManager(tl.c.Client, *tl.c.Client.ServiceContent.Setting)
	opts, err := om.Query(ctx, MaxQueryMetricsKey)
	if err != nil || opts[0].GetOptionValue().Value != "20" {
		t.Fatalf("option = %v (%v), want \"20\"", opts, err)
	}
	query := func(interval int32) string {
		_, err := m.Query(ctx, []types.PerfQuerySpec{{Entity: vm, IntervalId: interval, MaxSample: 1}})
		return faultName(err)
	}
	for _, tc := range []struct {
		name     string
		realtime bool // cap real-time queries too
		interval int32
		want     string
	}{
		{"real-time queries are not capped, as vCenter", false, 20, ""},
		{"historical queries are capped", false, 300, "RestrictedByAdministrator"},
		{"real-time capped when asked", true, 20, "RestrictedByAdministrator"},
		{"an unknown interval is refused", false, 42, "InvalidArgument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl.SetCapRealtimeQueries(tc.realtime)
			if got := query(tc.interval); got != tc.want {
				t.Errorf("fault %q, want %q", got, tc.want)
			}
		})
	}
	tl.SetCapRealtimeQueries(false)
	// The administrator raises the limit through the advanced settings.
	if err := om.Update(ctx, []types.BaseOptionValue{&types.OptionValue{Key: MaxQueryMetricsKey, Value: "64"}}); err != nil {
		t.Fatal(err)
	}
	if got := query(300); got != "" {
		t.Errorf("after raising the limit: fault %q", got)
	}
	err = om.Update(ctx, []types.BaseOptionValue{&types.OptionValue{Key: MaxQueryMetricsKey, Value: "many"}})
	if got := faultName(err); got != "InvalidArgument" {
		t.Errorf("a non-numeric limit: fault %q, want InvalidArgument", got)
	}
	if tl.CurrentSettings().MaxQueryMetrics != 64 {
		t.Errorf("a refused update changed the limit to %d", tl.CurrentSettings().MaxQueryMetrics)
	}
}

func TestHostCountersUseVolumeUUIDs(t *testing.T) {
	tl := newTestLab(t, testScenario)
	ctx := context.Background()
	tl.step(t, 2)
	host := tl.inv.hostByName["esx-01"]
	res, err := methods.QueryAvailablePerfMetric(ctx, tl.c.Client, &types.QueryAvailablePerfMetric{
		This: *tl.c.Client.ServiceContent.PerfManager, Entity: host.ref, IntervalId: 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	instances := map[string]bool{}
	for _, id := range res.Returnval {
		if id.CounterId == 351 {
			instances[id.Instance] = true
		}
	}
	for _, d := range tl.inv.stores {
		if d.mounted[host] != instances[d.uuid] {
			t.Errorf("datastore %s (%s): mounted %v, has an instance %v", d.name, d.uuid, d.mounted[host], instances[d.uuid])
		}
		if got := tl.dsMO(t, d.name).Summary.Url; got != "ds:///vmfs/volumes/"+d.uuid+"/" {
			t.Errorf("datastore %s url %q does not end in its instance id %s", d.name, got, d.uuid)
		}
	}
}
