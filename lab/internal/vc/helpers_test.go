package vc

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/task"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/basil-project/basil/lab/internal/scenario"
)

// testScenario has two hosts, three datastores (one mounted on esx-01 only, one small, one in
// maintenance), and VMs with one or two disks.
const testScenario = `
name: vc-test
seed: 11
clusters:
  - name: C0
    hosts: [esx-01, esx-02]
datastores:
  - name: ds-a
    capacity_gb: 400
    pod: pod-1
    device: {kind: fc15k, disks: 6, raid: "5", cache_mb: 512}
  - name: ds-b
    capacity_gb: 400
    pod: pod-1
    device: {kind: sata7k, disks: 6, raid: "5"}
  - name: ds-local
    capacity_gb: 400
    hosts: [esx-01]
    device: {kind: sata7k, disks: 4, raid: "5"}
  - name: ds-small
    capacity_gb: 12
    device: {kind: ssd, disks: 2, raid: "1"}
  - name: ds-maint
    capacity_gb: 400
    maintenance: true
    device: {kind: ssd, disks: 2, raid: "1"}
  - name: ds-vsan
    type: vsan
    capacity_gb: 400
    device: {kind: ssd, disks: 4, raid: "1"}
vms:
  - name: vm-1
    host: esx-02
    disks:
      - {unit: "scsi0:0", size_gb: 20, datastore: ds-a, workload: {oio: 8, io_size_kb: 8, read_pct: 70, random_pct: 100}}
      - {unit: "scsi0:1", size_gb: 10, datastore: ds-a, workload: {oio: 8, io_size_kb: 8, read_pct: 70, random_pct: 100}}
  - name: vm-2
    host: esx-02
    disks:
      - {unit: "scsi0:0", size_gb: 10, datastore: ds-a, workload: {oio: 4, io_size_kb: 4, read_pct: 90, random_pct: 80}}
  - name: vm-3
    host: esx-02
    disks:
      - {unit: "scsi0:0", size_gb: 10, datastore: ds-a}
  - name: vm-4
    host: esx-01
    disks:
      - {unit: "scsi0:0", size_gb: 10, datastore: ds-b}
`

var testStart = time.Date(2030, 1, 1, 0, 0, 5, 0, time.UTC)

// testLab is a lab with a paused clock, served over HTTP, and a logged-in govmomi client.
type testLab struct {
	*Lab
	c      *govmomi.Client
	finder *find.Finder
	url    *url.URL
}

func newTestLab(t *testing.T, yaml string) *testLab {
	t.Helper()
	s, err := scenario.Parse([]byte(yaml), "test")
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(s, Options{User: "tester", Password: "secret", Speed: 0, Start: testStart})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(l.Handler())
	t.Cleanup(func() {
		srv.Close()
		l.Close()
	})
	u, _ := url.Parse(srv.URL + "/sdk")
	u.User = url.UserPassword("tester", "secret")
	c, err := govmomi.NewClient(context.Background(), u, true)
	if err != nil {
		t.Fatal(err)
	}
	finder := find.NewFinder(c.Client, true)
	dc, err := finder.DefaultDatacenter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	finder.SetDatacenter(dc)
	return &testLab{Lab: l, c: c, finder: finder, url: u}
}

func (tl *testLab) vm(t *testing.T, name string) *object.VirtualMachine {
	t.Helper()
	vm, err := tl.finder.VirtualMachine(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return vm
}

func (tl *testLab) ds(t *testing.T, name string) *object.Datastore {
	t.Helper()
	ds, err := tl.finder.Datastore(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func (tl *testLab) vmMO(t *testing.T, name string) mo.VirtualMachine {
	t.Helper()
	var out mo.VirtualMachine
	if err := tl.vm(t, name).Properties(context.Background(), tl.vm(t, name).Reference(), nil, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func (tl *testLab) dsMO(t *testing.T, name string) mo.Datastore {
	t.Helper()
	var out mo.Datastore
	ds := tl.ds(t, name)
	if err := ds.Properties(context.Background(), ds.Reference(), nil, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func disks(vm mo.VirtualMachine) map[string]*types.VirtualDisk {
	out := map[string]*types.VirtualDisk{}
	for _, d := range vm.Config.Hardware.Device {
		if disk, ok := d.(*types.VirtualDisk); ok {
			out[diskUnit(disk)] = disk
		}
	}
	return out
}

func diskUnit(d *types.VirtualDisk) string {
	return "scsi" + string(rune('0'+(d.ControllerKey-1000))) + ":" + string(rune('0'+*d.UnitNumber))
}

func fileName(d *types.VirtualDisk) string {
	return d.Backing.(*types.VirtualDiskFlatVer2BackingInfo).FileName
}

// step advances simulated time by n intervals and gives the engine a moment to apply what the
// step made due.
func (tl *testLab) step(t *testing.T, n int) {
	t.Helper()
	if _, err := tl.StepIntervals(n); err != nil {
		t.Fatal(err)
	}
}

// settle brings the lab to its current simulated time before it returns, as its engine does when a
// relocation is submitted: what may start now has started (and what may not stays queued) without
// waiting on the engine's goroutine, and without simulated time passing.
func (tl *testLab) settle() {
	tl.advance(tl.Clock().Now())
}

// waitTask steps time until a task ends and returns its fault (nil on success). Between steps it
// polls a little: some work (a move into a datastore cluster, a queued relocation's start) runs in
// the background without simulated time passing.
func (tl *testLab) waitTask(t *testing.T, tk *object.Task, maxSteps int) types.BaseMethodFault {
	t.Helper()
	ctx := context.Background()
	for i := 0; i <= maxSteps; i++ {
		polls := 4
		if i == maxSteps {
			polls = 100
		}
		for poll := 0; poll < polls; poll++ {
			var m mo.Task
			if err := tk.Properties(ctx, tk.Reference(), []string{"info"}, &m); err != nil {
				t.Fatal(err)
			}
			switch m.Info.State {
			case types.TaskInfoStateSuccess:
				return nil
			case types.TaskInfoStateError:
				return m.Info.Error.Fault
			}
			time.Sleep(5 * time.Millisecond)
		}
		if i < maxSteps {
			tl.step(t, 1)
		}
	}
	t.Fatalf("task %s did not end in %d intervals", tk.Reference().Value, maxSteps)
	return nil
}

// faultName returns the vSphere fault type name of a call or task error ("NoDiskSpace"), or "".
func faultName(err error) string {
	if err == nil {
		return ""
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if soap.IsSoapFault(e) {
			return typeName(soap.ToSoapFault(e).VimFault())
		}
		if soap.IsVimFault(e) {
			return typeName(soap.ToVimFault(e))
		}
	}
	var te task.Error
	if errors.As(err, &te) {
		return typeName(te.Fault())
	}
	return fmt.Sprintf("not a vSphere fault: %T %v", err, err)
}

// typeName is a fault's type name without package or pointer.
func typeName(f any) string {
	if f == nil {
		return ""
	}
	t := reflect.TypeOf(f)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
