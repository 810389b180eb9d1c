package vc

import (
	"fmt"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// StoragePod is the lab's datastore cluster: datastores move in and out of it (the simulator's
// MoveIntoFolder duplicates children and cannot move a datastore out of a pod), and its summary
// adds up its datastores' capacity and free space.
type StoragePod struct {
	*simulator.StoragePod
	lab *Lab
}

// MoveIntoFolderTask moves datastores into the datastore cluster.
func (p *StoragePod) MoveIntoFolderTask(ctx *simulator.Context, req *types.MoveIntoFolder_Task) soap.HasFault {
	return &methods.MoveIntoFolder_TaskBody{Res: &types.MoveIntoFolder_TaskResponse{
		Returnval: p.lab.moveTask(ctx, p.Self, req.List),
	}}
}

// Folder handles moves of datastores between datastore clusters and folders; other moves are the
// simulator's.
type Folder struct {
	*simulator.Folder
	lab *Lab
}

// MoveIntoFolderTask moves datastores out of datastore clusters (or between folders); other
// objects move as the simulator moves them.
func (f *Folder) MoveIntoFolderTask(ctx *simulator.Context, req *types.MoveIntoFolder_Task) soap.HasFault {
	for _, ref := range req.List {
		if ref.Type != "Datastore" {
			return f.Folder.MoveIntoFolderTask(ctx, req)
		}
	}
	return &methods.MoveIntoFolder_TaskBody{Res: &types.MoveIntoFolder_TaskResponse{
		Returnval: f.lab.moveTask(ctx, f.Self, req.List),
	}}
}

// moveTask moves datastores in a task of its own, outside the caller's object lock, so that moves
// between two clusters in opposite directions cannot deadlock on the two clusters' locks.
func (l *Lab) moveTask(ctx *simulator.Context, dst types.ManagedObjectReference, list []types.ManagedObjectReference) types.ManagedObjectReference {
	task := l.newTask(ctx, dst, "MoveIntoFolder_Task", "moveInto")
	list = append([]types.ManagedObjectReference(nil), list...)
	go func() {
		bg := l.newContext()
		task.running()
		if f := movePodMembers(bg, dst, list); f != nil {
			task.fail(f.fault, f.msg)
			return
		}
		l.refreshPods(bg)
		task.succeed(nil)
	}()
	return task.ref()
}

// movePodMembers moves datastores into dst, a datastore cluster or a datastore folder.
func movePodMembers(ctx *simulator.Context, dst types.ManagedObjectReference, list []types.ManagedObjectReference) *taskError {
	var dstFolder *mo.Folder
	var dstObj mo.Reference
	switch o := ctx.Map.Get(dst).(type) {
	case *simulator.StoragePod:
		dstFolder, dstObj = &o.Folder, o
	case *simulator.Folder:
		dstFolder, dstObj = &o.Folder, o
		if !hasChildType(dstFolder, "Datastore") {
			return faultf(&types.NotSupported{}, "The folder '%s' does not hold datastores.", o.Name)
		}
	default:
		return faultf(&types.ManagedObjectNotFound{Obj: dst}, "The object '%s' does not exist.", dst.Value)
	}
	for i, ref := range list {
		ds, ok := ctx.Map.Get(ref).(*simulator.Datastore)
		if !ok {
			return faultf(&types.InvalidArgument{InvalidProperty: fmt.Sprintf("list[%d]", i)},
				"A specified parameter was not correct: list[%d] (a datastore cluster holds datastores only)", i)
		}
		var parentRef types.ManagedObjectReference
		ctx.WithLock(ds, func() { parentRef = *ds.Parent })
		if parentRef == dst {
			continue
		}
		switch parent := ctx.Map.Get(parentRef).(type) {
		case *simulator.StoragePod:
			mutate(ctx, parent, []string{"childEntity"}, func() { parent.ChildEntity = removeRef(parent.ChildEntity, ref) })
		case *simulator.Folder:
			mutate(ctx, parent, []string{"childEntity"}, func() { parent.ChildEntity = removeRef(parent.ChildEntity, ref) })
		}
		mutate(ctx, ds, []string{"parent"}, func() {
			p := dst
			ds.Parent = &p
		})
		mutate(ctx, dstObj, []string{"childEntity"}, func() { dstFolder.ChildEntity = append(dstFolder.ChildEntity, ref) })
	}
	return nil
}

func hasChildType(f *mo.Folder, kind string) bool {
	for _, t := range f.ChildType {
		if t == kind {
			return true
		}
	}
	return false
}

// refreshPodsLater refreshes the clusters' summaries from a goroutine of its own: a SOAP handler
// holds its object's lock and must not take clusters' locks (another handler may hold a cluster
// and want that object).
func (l *Lab) refreshPodsLater() {
	if l.podRefresh.Swap(true) {
		return
	}
	go func() {
		l.podRefresh.Store(false)
		l.refreshPods(l.newContext())
	}()
}

// refreshPods recomputes every datastore cluster's capacity and free space from its members,
// taking one object lock at a time. The caller holds no simulator object lock.
func (l *Lab) refreshPods(ctx *simulator.Context) {
	for _, e := range ctx.Map.All("StoragePod") {
		pod, ok := e.(*simulator.StoragePod)
		if !ok {
			continue
		}
		var members []types.ManagedObjectReference
		ctx.WithLock(pod, func() { members = append(members, pod.ChildEntity...) })
		var capacity, free int64
		for _, ref := range members {
			if ds, ok := ctx.Map.Get(ref).(*simulator.Datastore); ok {
				ctx.WithLock(ds, func() {
					capacity += ds.Summary.Capacity
					free += ds.Summary.FreeSpace
				})
			}
		}
		mutate(ctx, pod, []string{"summary"}, func() {
			if pod.Summary == nil {
				pod.Summary = &types.StoragePodSummary{}
			}
			pod.Summary.Name = pod.Name
			pod.Summary.Capacity = capacity
			pod.Summary.FreeSpace = free
		})
	}
}
