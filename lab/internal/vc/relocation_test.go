package vc

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/basil-project/basil/lab/internal/physics"
)

func TestRelocateOneDiskMovesItsBacking(t *testing.T) {
	tl := newTestLab(t, testScenario)
	ctx := context.Background()
	before := tl.vmMO(t, "vm-1")
	d1 := disks(before)["scsi0:1"]
	freeA, freeB := tl.dsMO(t, "ds-a").Summary.FreeSpace, tl.dsMO(t, "ds-b").Summary.FreeSpace
	dsB := tl.ds(t, "ds-b").Reference()

	tk, err := tl.vm(t, "vm-1").Relocate(ctx, types.VirtualMachineRelocateSpec{
		Disk: []types.VirtualMachineRelocateSpecDiskLocator{{DiskId: d1.Key, Datastore: dsB}},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	if f := tl.waitTask(t, tk, 10); f != nil {
		t.Fatalf("relocation failed: %T", f)
	}

	after := tl.vmMO(t, "vm-1")
	if got, want := fileName(disks(after)["scsi0:1"]), "[ds-b] vm-1/vm-1_1.vmdk"; got != want {
		t.Errorf("moved disk: backing %q, want %q", got, want)
	}
	if got, want := fileName(disks(after)["scsi0:0"]), "[ds-a] vm-1/vm-1.vmdk"; got != want {
		t.Errorf("other disk: backing %q, want %q (it was not asked to move)", got, want)
	}
	var names []string
	for _, ref := range after.Datastore {
		names = append(names, tl.inv.storeByRef[ref.Value].name)
	}
	if !reflect.DeepEqual(names, []string{"ds-a", "ds-b"}) {
		t.Errorf("vm.datastore = %v, want [ds-a ds-b]", names)
	}
	found := false
	for _, f := range after.LayoutEx.File {
		if f.Name == "[ds-b] vm-1/vm-1_1-flat.vmdk" && f.Size == 10<<30 {
			found = true
		}
		if strings.HasPrefix(f.Name, "[ds-a] vm-1/vm-1_1") {
			t.Errorf("layoutEx still lists %s on the source", f.Name)
		}
	}
	if !found {
		t.Errorf("layoutEx does not list the moved extent on ds-b: %+v", after.LayoutEx.File)
	}
	moved := int64(10<<30) + descriptorSize
	if got := tl.dsMO(t, "ds-a").Summary.FreeSpace - freeA; got != moved {
		t.Errorf("ds-a free space grew by %d, want %d", got, moved)
	}
	if got := freeB - tl.dsMO(t, "ds-b").Summary.FreeSpace; got != moved {
		t.Errorf("ds-b free space shrank by %d, want %d", got, moved)
	}
	if ds, _ := tl.physics.DiskDatastore(physics.DiskKey{VM: "vm-1", Unit: "scsi0:1"}); ds != "ds-b" {
		t.Errorf("the physics has the disk on %q, want ds-b", ds)
	}
}

func TestRelocateRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		vm     string
		target string
		prep   func(tl *testLab)
		want   string // fault type
		call   bool   // refused by the call itself rather than in the task
	}{
		{name: "target lacks space", vm: "vm-1", target: "ds-small", want: "NoDiskSpace"},
		{name: "target inaccessible", vm: "vm-2", target: "ds-b", want: "InaccessibleDatastore",
			prep: func(tl *testLab) {
				if err := tl.SetAccessible("ds-b", false); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "target in maintenance", vm: "vm-2", target: "ds-maint", want: "InvalidDatastoreState"},
		{name: "target not mounted on the VM's host", vm: "vm-2", target: "ds-local", want: "DatastoreNotWritableOnHost"},
		{name: "unknown datastore", vm: "vm-2", target: "", want: "ManagedObjectNotFound", call: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTestLab(t, testScenario)
			if tc.prep != nil {
				tc.prep(tl)
			}
			ctx := context.Background()
			target := types.ManagedObjectReference{Type: "Datastore", Value: "datastore-9999"}
			if tc.target != "" {
				target = tl.ds(t, tc.target).Reference()
			}
			before := tl.vmMO(t, tc.vm)
			tk, err := tl.vm(t, tc.vm).Relocate(ctx, types.VirtualMachineRelocateSpec{Datastore: &target}, "")
			var got string
			if tc.call {
				got = faultName(err)
			} else {
				if err != nil {
					t.Fatal(err)
				}
				got = typeName(tl.waitTask(t, tk, 5))
			}
			if got != tc.want {
				t.Fatalf("fault %s, want %s", got, tc.want)
			}
			after := tl.vmMO(t, tc.vm)
			if !reflect.DeepEqual(disks(before)["scsi0:0"].Backing, disks(after)["scsi0:0"].Backing) {
				t.Errorf("a refused relocation changed the disk's backing")
			}
		})
	}
}

func TestRelocationConcurrencyLimits(t *testing.T) {
	// Fourteen VMs each move a 10 GB disk from ds-a to ds-b: six on esx-01 (2 may copy at a time
	// there), eight spread over esx-02..06 (2, 2, 2, 1, 1): the hosts would allow 10 copies, the
	// datastores' limit allows 8.
	var b strings.Builder
	b.WriteString(`
name: concurrency
clusters: [{name: C0, hosts: [esx-01, esx-02, esx-03, esx-04, esx-05, esx-06]}]
datastores:
  - {name: ds-a, capacity_gb: 2000, device: {kind: fc15k, disks: 8}}
  - {name: ds-b, capacity_gb: 2000, device: {kind: fc15k, disks: 8}}
vms:
`)
	for i := 1; i <= 14; i++ {
		host := "esx-01"
		if i > 6 {
			host = fmt.Sprintf("esx-%02d", 2+(i-7)%5)
		}
		fmt.Fprintf(&b, "  - {name: vm-%02d, host: %s, disks: [{unit: \"scsi0:0\", size_gb: 10, datastore: ds-a}]}\n", i, host)
	}
	tl := newTestLab(t, b.String())
	ctx := context.Background()
	dsB := tl.ds(t, "ds-b").Reference()
	var tasks []*object.Task
	for i := 1; i <= 14; i++ {
		tk, err := tl.vm(t, fmt.Sprintf("vm-%02d", i)).Relocate(ctx, types.VirtualMachineRelocateSpec{Datastore: &dsB}, "")
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, tk)
	}
	maxHost, maxStore := 0, 0
	for step := 0; step < 60; step++ {
		tl.settle() // start what may start, at this simulated instant
		perHost := map[string]int{}
		running := 0
		p := tl.Placement()
		for _, r := range p.Relocations {
			if r.Running {
				running++
				perHost[tl.inv.vmByName[r.VM].host.name]++
			}
		}
		for _, n := range perHost {
			maxHost = max(maxHost, n)
		}
		maxStore = max(maxStore, running)
		if len(p.Relocations) == 0 {
			break
		}
		tl.step(t, 1)
	}
	if maxHost != maxRelocationsPerHost {
		t.Errorf("at most %d relocations ran at once on a host, want the limit %d", maxHost, maxRelocationsPerHost)
	}
	if maxStore != maxRelocationsPerDatastore {
		t.Errorf("at most %d relocations ran at once on the datastores, want the limit %d", maxStore, maxRelocationsPerDatastore)
	}
	for _, tk := range tasks {
		if f := tl.waitTask(t, tk, 10); f != nil {
			t.Fatalf("a queued relocation failed: %T", f)
		}
	}
}

func TestRelocationTakesSimulatedTimeAndLoadsBothDatastores(t *testing.T) {
	tl := newTestLab(t, testScenario)
	ctx := context.Background()
	dsB := tl.ds(t, "ds-b").Reference()
	start := tl.Clock().Now()
	tk, err := tl.vm(t, "vm-1").Relocate(ctx, types.VirtualMachineRelocateSpec{Datastore: &dsB}, "")
	if err != nil {
		t.Fatal(err)
	}
	tl.settle() // the copy starts now, so it loads the whole next interval
	tl.step(t, 1)
	truth, err := tl.GroundTruth(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range truth.Datastores {
		if (d.Name == "ds-a" || d.Name == "ds-b") && d.CopyMBps <= 0 {
			t.Errorf("%s carries no copy load during the relocation", d.Name)
		}
	}
	if f := tl.waitTask(t, tk, 20); f != nil {
		t.Fatalf("relocation failed: %T", f)
	}
	var done mo.Task
	if err := tk.Properties(ctx, tk.Reference(), []string{"info"}, &done); err != nil {
		t.Fatal(err)
	}
	info := done.Info
	// Each disk, then the VM's files, copied one after the other at 200 MB/s (a copy lasts at
	// least a second).
	var secs float64
	for _, bytes := range []float64{20<<30 + descriptorSize, 10<<30 + descriptorSize, homeBytes} {
		secs += max(1, bytes/(200<<20))
	}
	want := time.Duration(secs * float64(time.Second))
	got := info.CompleteTime.Sub(*info.StartTime)
	if d := got - want; d < -2*time.Second || d > 2*time.Second {
		t.Errorf("the copy took %v of simulated time, want about %v", got, want)
	}
	if info.StartTime.Before(start) || info.CompleteTime.After(tl.Clock().Now()) {
		t.Errorf("task times %v..%v are not on the simulated clock (%v..%v)", info.StartTime, info.CompleteTime, start, tl.Clock().Now())
	}
}

func TestRelocationReachesPropertyCollectorWaiters(t *testing.T) {
	tl := newTestLab(t, testScenario)
	ctx := context.Background()
	c := tl.c.Client
	pc, err := property.DefaultCollector(c).Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v, err := view.NewManager(c).CreateContainerView(ctx, c.ServiceContent.RootFolder, []string{"VirtualMachine"}, true)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{"config.hardware.device", "datastore", "layoutEx.file"}
	_, err = pc.CreateFilter(ctx, types.CreateFilter{Spec: types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: v.Reference(), Skip: types.NewBool(true), SelectSet: []types.BaseSelectionSpec{
			&types.TraversalSpec{Type: "ContainerView", Path: "view"},
		}}},
		PropSet: []types.PropertySpec{{Type: "VirtualMachine", PathSet: paths}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	wait := func(version string) *types.UpdateSet {
		res, err := methods.WaitForUpdatesEx(ctx, c, &types.WaitForUpdatesEx{This: pc.Reference(), Version: version,
			Options: &types.WaitOptions{MaxWaitSeconds: types.NewInt32(2)}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Returnval
	}
	initial := wait("")
	vm := tl.vm(t, "vm-2")
	dsB := tl.ds(t, "ds-b").Reference()
	tk, err := vm.Relocate(ctx, types.VirtualMachineRelocateSpec{Datastore: &dsB}, "")
	if err != nil {
		t.Fatal(err)
	}
	if f := tl.waitTask(t, tk, 10); f != nil {
		t.Fatalf("relocation failed: %T", f)
	}
	changed := map[string]bool{}
	version := initial.Version
	for i := 0; i < 5 && len(changed) < len(paths); i++ {
		set := wait(version)
		if set == nil {
			break
		}
		version = set.Version
		for _, f := range set.FilterSet {
			for _, o := range f.ObjectSet {
				if o.Obj == vm.Reference() && o.Kind == types.ObjectUpdateKindModify {
					for _, ch := range o.ChangeSet {
						changed[ch.Name] = true
					}
				}
			}
		}
	}
	for _, p := range paths {
		if !changed[p] {
			t.Errorf("no update of %s reached the waiter (got %v)", p, changed)
		}
	}
}

func TestCancelledRelocationLeavesEverythingInPlace(t *testing.T) {
	tl := newTestLab(t, testScenario)
	ctx := context.Background()
	freeB := tl.dsMO(t, "ds-b").Summary.FreeSpace
	dsB := tl.ds(t, "ds-b").Reference()
	tk, err := tl.vm(t, "vm-1").Relocate(ctx, types.VirtualMachineRelocateSpec{Datastore: &dsB}, "")
	if err != nil {
		t.Fatal(err)
	}
	tl.settle()
	tl.step(t, 1)
	if got := tl.dsMO(t, "ds-b").Summary.FreeSpace; got >= freeB {
		t.Fatalf("the running copy holds no space on the target (%d >= %d)", got, freeB)
	}
	if err := tk.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	tl.step(t, 1) // the step's advance drops the cancelled relocation before it returns
	if p := tl.Placement(); len(p.Relocations) != 0 {
		t.Fatalf("relocations left: %+v", p.Relocations)
	}
	if got := tl.dsMO(t, "ds-b").Summary.FreeSpace; got != freeB {
		t.Errorf("ds-b free space %d after the cancel, want %d back", got, freeB)
	}
	if got := fileName(disks(tl.vmMO(t, "vm-1"))["scsi0:0"]); got != "[ds-a] vm-1/vm-1.vmdk" {
		t.Errorf("a cancelled relocation moved the disk to %s", got)
	}
	tl.step(t, 1)
	truth, err := tl.GroundTruth(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range truth.Datastores {
		if d.CopyMBps != 0 {
			t.Errorf("%s still carries %v MB/s of copy after the cancel", d.Name, d.CopyMBps)
		}
	}
}
