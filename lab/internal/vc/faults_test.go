package vc

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/performance"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func TestFaultRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rule  FaultRule
		call  func(tl *testLab) string // makes the call, returns its fault type
		first string                   // fault of the first call
		then  string                   // fault of the second call
	}{
		{
			name: "a task fails once with the injected fault",
			rule: FaultRule{Method: "RelocateVM_Task", Fault: "TaskInProgress", Count: 1},
			call: func(tl *testLab) string {
				ds := tl.ds(t, "ds-b").Reference()
				tk, err := tl.vm(t, "vm-3").Relocate(context.Background(), types.VirtualMachineRelocateSpec{Datastore: &ds}, "")
				if err != nil {
					return faultName(err)
				}
				return typeName(tl.waitTask(t, tk, 10))
			},
			first: "TaskInProgress", then: "",
		},
		{
			name: "a call fails with a SOAP fault",
			rule: FaultRule{Method: "QueryPerf", Fault: "SystemError", Message: "boom", Count: 1},
			call: func(tl *testLab) string {
				m := performance.NewManager(tl.c.Client)
				_, err := m.Query(context.Background(), []types.PerfQuerySpec{{Entity: tl.vm(t, "vm-1").Reference(), MaxSample: 1}})
				return faultName(err)
			},
			first: "SystemError", then: "",
		},
		{
			name: "a rule for another object does not fire",
			rule: FaultRule{Method: "PowerOffVM_Task", Object: "vm-4", Fault: "InvalidState"},
			call: func(tl *testLab) string {
				tk, err := tl.vm(t, "vm-1").PowerOff(context.Background())
				if err != nil {
					return faultName(err)
				}
				return typeName(tl.waitTask(t, tk, 0))
			},
			first: "", then: "InvalidPowerState",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTestLab(t, testScenario)
			if _, err := tl.AddFault(tc.rule); err != nil {
				t.Fatal(err)
			}
			if got := tc.call(tl); got != tc.first {
				t.Errorf("first call: fault %q, want %q", got, tc.first)
			}
			if got := tc.call(tl); got != tc.then {
				t.Errorf("second call: fault %q, want %q", got, tc.then)
			}
		})
	}
}

func TestFaultRuleRefusedNamingEveryProblem(t *testing.T) {
	tl := newTestLab(t, testScenario)
	_, err := tl.AddFault(FaultRule{Fault: "NoSuchFault", Probability: 2, Count: -1, Method: "QueryPerf", Delivery: "task"})
	if err == nil {
		t.Fatal("a bad rule was accepted")
	}
	for _, want := range []string{"fault:", "probability:", "count:", "delivery:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if len(tl.Faults()) != 0 {
		t.Errorf("a refused rule was armed")
	}
}

func TestSessionLossAndLatency(t *testing.T) {
	tl := newTestLab(t, testScenario)
	ctx := context.Background()
	ref := tl.vm(t, "vm-1").Reference()
	if n := tl.KillSessions(); n < 1 {
		t.Fatalf("killed %d sessions, want at least the test client's", n)
	}
	var m mo.VirtualMachine
	err := property.DefaultCollector(tl.c.Client).RetrieveOne(ctx, ref, []string{"name"}, &m)
	if got := faultName(err); got != "NotAuthenticated" {
		t.Fatalf("after session loss: %q, want NotAuthenticated", got)
	}
	if err := tl.c.Login(ctx, tl.url.User); err != nil {
		t.Fatalf("cannot log in again: %v", err)
	}
	if err := tl.SetLatency(50 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := tl.finder.VirtualMachine(ctx, "vm-1"); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Errorf("a call took %v with 50 ms of added latency", time.Since(start))
	}
	if err := tl.SetLatency(-time.Second); err == nil {
		t.Error("a negative latency was accepted")
	}
	tl.ClearFaults()
	if tl.Latency() != 0 {
		t.Error("ClearFaults kept the latency")
	}
}

func TestInaccessibleDatastore(t *testing.T) {
	tl := newTestLab(t, testScenario)
	if err := tl.SetAccessible("ds-a", false); err != nil {
		t.Fatal(err)
	}
	ds := tl.dsMO(t, "ds-a")
	if ds.Summary.Accessible || *ds.Host[0].MountInfo.Accessible {
		t.Error("the datastore still shows accessible")
	}
	tl.step(t, 1)
	truth, err := tl.GroundTruth(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range truth.Disks {
		if d.Datastore == "ds-a" && d.IOPS != 0 {
			t.Errorf("%s %s does IO on an inaccessible datastore", d.VM, d.Unit)
		}
	}
	tl.ClearFaults()
	if !tl.dsMO(t, "ds-a").Summary.Accessible {
		t.Error("ClearFaults left the datastore inaccessible")
	}
	if err := tl.SetAccessible("nope", false); err == nil {
		t.Error("an unknown datastore was accepted")
	}
}
