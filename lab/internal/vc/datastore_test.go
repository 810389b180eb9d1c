package vc

import (
	"context"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func TestMaintenanceModeWaitsForTheDatastoreToEmpty(t *testing.T) {
	tl := newTestLab(t, testScenario)
	ctx := context.Background()
	dsB := tl.ds(t, "ds-b")
	res, err := methods.DatastoreEnterMaintenanceMode(ctx, tl.c.Client, &types.DatastoreEnterMaintenanceMode{This: dsB.Reference()})
	if err != nil {
		t.Fatal(err)
	}
	if got := tl.dsMO(t, "ds-b").Summary.MaintenanceMode; got != string(types.DatastoreSummaryMaintenanceModeStateEnteringMaintenance) {
		t.Fatalf("maintenance mode %q while vm-4 is still on it", got)
	}
	enter := object.NewTask(tl.c.Client, *res.Returnval.Task)
	// A datastore entering maintenance receives nothing; vm-4 leaves it for ds-a.
	dsA := tl.ds(t, "ds-a").Reference()
	mv, err := tl.vm(t, "vm-4").Relocate(ctx, types.VirtualMachineRelocateSpec{Datastore: &dsA}, "")
	if err != nil {
		t.Fatal(err)
	}
	if f := tl.waitTask(t, mv, 10); f != nil {
		t.Fatalf("evacuation failed: %T", f)
	}
	if f := tl.waitTask(t, enter, 2); f != nil {
		t.Fatalf("entering maintenance failed: %T", f)
	}
	if got := tl.dsMO(t, "ds-b").Summary.MaintenanceMode; got != string(types.DatastoreSummaryMaintenanceModeStateInMaintenance) {
		t.Fatalf("maintenance mode %q after the datastore emptied", got)
	}
	back := tl.ds(t, "ds-b").Reference()
	mv, _ = tl.vm(t, "vm-4").Relocate(ctx, types.VirtualMachineRelocateSpec{Datastore: &back}, "")
	if got := typeName(tl.waitTask(t, mv, 2)); got != "InvalidDatastoreState" {
		t.Errorf("moving onto a datastore in maintenance: fault %q", got)
	}
	ex, err := methods.DatastoreExitMaintenanceMode_Task(ctx, tl.c.Client, &types.DatastoreExitMaintenanceMode_Task{This: dsB.Reference()})
	if err != nil {
		t.Fatal(err)
	}
	if f := tl.waitTask(t, object.NewTask(tl.c.Client, ex.Returnval), 0); f != nil {
		t.Fatalf("exit failed: %T", f)
	}
	if got := tl.dsMO(t, "ds-b").Summary.MaintenanceMode; got != string(types.DatastoreSummaryMaintenanceModeStateNormal) {
		t.Errorf("maintenance mode %q after exit", got)
	}
	_, err = methods.DatastoreEnterMaintenanceMode(ctx, tl.c.Client, &types.DatastoreEnterMaintenanceMode{This: tl.ds(t, "ds-maint").Reference()})
	if got := faultName(err); got != "InvalidState" {
		t.Errorf("entering maintenance twice: fault %q", got)
	}
}

func TestStoragePodMembershipAndSummary(t *testing.T) {
	tl := newTestLab(t, testScenario)
	ctx := context.Background()
	podRef := tl.inv.pods["pod-1"]
	pod := object.NewStoragePod(tl.c.Client, podRef)
	readPod := func() mo.StoragePod {
		var p mo.StoragePod
		if err := pod.Properties(ctx, podRef, []string{"childEntity", "summary"}, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := readPod()
	a, b := tl.dsMO(t, "ds-a"), tl.dsMO(t, "ds-b")
	if len(p.ChildEntity) != 2 || p.Summary.Capacity != a.Summary.Capacity+b.Summary.Capacity ||
		p.Summary.FreeSpace != a.Summary.FreeSpace+b.Summary.FreeSpace {
		t.Fatalf("pod %d members, capacity %d free %d", len(p.ChildEntity), p.Summary.Capacity, p.Summary.FreeSpace)
	}
	tk, err := pod.MoveInto(ctx, []types.ManagedObjectReference{tl.ds(t, "ds-small").Reference()})
	if err != nil {
		t.Fatal(err)
	}
	if f := tl.waitTask(t, tk, 0); f != nil {
		t.Fatalf("move into the pod failed: %T", f)
	}
	if p = readPod(); len(p.ChildEntity) != 3 {
		t.Fatalf("pod has %d members after adding ds-small", len(p.ChildEntity))
	}
	folder := object.NewFolder(tl.c.Client, tl.inv.dsFolder)
	tk, err = folder.MoveInto(ctx, []types.ManagedObjectReference{tl.ds(t, "ds-a").Reference()})
	if err != nil {
		t.Fatal(err)
	}
	if f := tl.waitTask(t, tk, 0); f != nil {
		t.Fatalf("move out of the pod failed: %T", f)
	}
	if p = readPod(); len(p.ChildEntity) != 2 {
		t.Fatalf("pod has %d members after ds-a left", len(p.ChildEntity))
	}
	if parent := tl.dsMO(t, "ds-a").Parent; *parent != tl.inv.dsFolder {
		t.Errorf("ds-a's parent is %v, want the datastore folder", parent)
	}
	tk, _ = pod.MoveInto(ctx, []types.ManagedObjectReference{tl.vm(t, "vm-1").Reference()})
	if got := typeName(tl.waitTask(t, tk, 0)); got != "InvalidArgument" {
		t.Errorf("moving a VM into a datastore cluster: fault %q", got)
	}
}
