package vc

import (
	"fmt"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Datastore is the lab's datastore: maintenance mode, free space kept by the lab's bookkeeping
// (the simulator would stat a local directory), and no renaming or destroying (the scenario's
// names tie the inventory to the physics).
type Datastore struct {
	*simulator.Datastore
	lab *Lab
}

func (ds *Datastore) info() *dsInfo { return ds.lab.inv.storeByRef[ds.Self.Value] }

// DatastoreEnterMaintenanceMode puts an empty datastore in maintenance at once; one that still
// holds VM files enters maintenance and stays "enteringMaintenance" until relocations have
// emptied it (Storage DRS would recommend those moves; in the lab the client makes them). The
// returned result carries a task that completes when the datastore is in maintenance.
func (ds *Datastore) DatastoreEnterMaintenanceMode(ctx *simulator.Context, _ *types.DatastoreEnterMaintenanceMode) soap.HasFault {
	body := new(methods.DatastoreEnterMaintenanceModeBody)
	d := ds.info()
	if d == nil {
		body.Fault_ = simulator.Fault("The datastore is not managed by the lab.", &types.NotSupported{})
		return body
	}
	l := ds.lab
	l.mu.Lock()
	state := d.maintenance
	l.mu.Unlock()
	if state != types.DatastoreSummaryMaintenanceModeStateNormal {
		body.Fault_ = simulator.Fault(fmt.Sprintf("The datastore '%s' is already %s.", d.name, state), &types.InvalidState{})
		return body
	}
	task := l.newTask(ctx, ds.Self, "EnterMaintenanceMode_Task", "enterMaintenanceMode")
	task.running()
	l.mu.Lock()
	d.maintenance = types.DatastoreSummaryMaintenanceModeStateEnteringMaintenance
	d.maintWaiters = append(d.maintWaiters, task)
	l.mu.Unlock()
	l.publishStores(ctx, []*dsInfo{d})
	l.checkMaintenanceOf(ctx, d)
	l.refreshPodsLater()
	body.Res = &types.DatastoreEnterMaintenanceModeResponse{Returnval: types.StoragePlacementResult{Task: ptrRef(task.ref())}}
	return body
}

// DatastoreExitMaintenanceModeTask returns the datastore to normal use; a pending enter task fails
// as cancelled.
func (ds *Datastore) DatastoreExitMaintenanceModeTask(ctx *simulator.Context, _ *types.DatastoreExitMaintenanceMode_Task) soap.HasFault {
	body := new(methods.DatastoreExitMaintenanceMode_TaskBody)
	d := ds.info()
	if d == nil {
		body.Fault_ = simulator.Fault("The datastore is not managed by the lab.", &types.NotSupported{})
		return body
	}
	l := ds.lab
	task := l.newTask(ctx, ds.Self, "DatastoreExitMaintenanceMode_Task", "exitMaintenanceMode")
	l.mu.Lock()
	state := d.maintenance
	waiters := d.maintWaiters
	if state != types.DatastoreSummaryMaintenanceModeStateNormal {
		d.maintenance = types.DatastoreSummaryMaintenanceModeStateNormal
		d.maintWaiters = nil
	}
	l.mu.Unlock()
	if state == types.DatastoreSummaryMaintenanceModeStateNormal {
		task.fail(&types.InvalidState{}, fmt.Sprintf("The datastore '%s' is not in maintenance mode.", d.name))
	} else {
		task.running()
		for _, w := range waiters {
			w.fail(&types.RequestCanceled{}, "The datastore left maintenance mode before it was entered.")
		}
		l.publishStores(ctx, []*dsInfo{d})
		l.refreshPodsLater()
		task.succeed(nil)
	}
	body.Res = &types.DatastoreExitMaintenanceMode_TaskResponse{Returnval: task.ref()}
	return body
}

// RefreshDatastore refreshes capacity and free space (from the lab's bookkeeping).
func (ds *Datastore) RefreshDatastore(ctx *simulator.Context, _ *types.RefreshDatastore) soap.HasFault {
	if d := ds.info(); d != nil {
		ds.lab.publishStores(ctx, []*dsInfo{d})
		ds.lab.refreshPodsLater()
	}
	return &methods.RefreshDatastoreBody{Res: &types.RefreshDatastoreResponse{}}
}

// RefreshDatastoreStorageInfo refreshes the storage information, as RefreshDatastore.
func (ds *Datastore) RefreshDatastoreStorageInfo(ctx *simulator.Context, _ *types.RefreshDatastoreStorageInfo) soap.HasFault {
	if d := ds.info(); d != nil {
		ds.lab.publishStores(ctx, []*dsInfo{d})
		ds.lab.refreshPodsLater()
	}
	return &methods.RefreshDatastoreStorageInfoBody{Res: &types.RefreshDatastoreStorageInfoResponse{}}
}

// DestroyTask is refused for the scenario's datastores.
func (ds *Datastore) DestroyTask(ctx *simulator.Context, req *types.Destroy_Task) soap.HasFault {
	if ds.info() == nil {
		return ds.Datastore.DestroyTask(ctx, req)
	}
	return &methods.Destroy_TaskBody{Fault_: simulator.Fault("The lab does not destroy its scenario's datastores.", &types.NotSupported{})}
}

// RenameDatastore is refused: the scenario's names tie the inventory to the physics.
func (ds *Datastore) RenameDatastore(_ *simulator.Context, _ *types.RenameDatastore) soap.HasFault {
	return &methods.RenameDatastoreBody{Fault_: simulator.Fault("The lab does not rename datastores.", &types.NotSupported{})}
}

// RenameTask is refused as RenameDatastore.
func (ds *Datastore) RenameTask(_ *simulator.Context, _ *types.Rename_Task) soap.HasFault {
	return &methods.Rename_TaskBody{Fault_: simulator.Fault("The lab does not rename datastores.", &types.NotSupported{})}
}

func ptrRef(r types.ManagedObjectReference) *types.ManagedObjectReference { return &r }

var storeRoots = []string{"summary", "info", "host", "iormConfiguration", "overallStatus"}

// publishStores brings datastore objects (free space, accessibility, maintenance state, SIOC) up to
// the lab's bookkeeping. The caller refreshes the datastore clusters' summaries after (refreshPods
// when it holds no object lock, refreshPodsLater from a SOAP handler).
func (l *Lab) publishStores(ctx *simulator.Context, stores []*dsInfo) {
	type view struct {
		free, capacity int64
		accessible     bool
		maintenance    types.DatastoreSummaryMaintenanceModeState
		iorm           types.StorageIORMInfo
	}
	views := make([]view, len(stores))
	l.mu.Lock()
	for i, d := range stores {
		views[i] = view{d.free(), d.capacity, d.accessible, d.maintenance, d.iorm}
	}
	l.mu.Unlock()
	now := l.clock.Now()
	for i, d := range stores {
		ds := ctx.Map.Get(d.ref).(*simulator.Datastore)
		v := views[i]
		mutate(ctx, ds, storeRoots, func() {
			ds.Summary.FreeSpace = v.free
			ds.Summary.Capacity = v.capacity
			ds.Summary.Accessible = v.accessible
			ds.Summary.MaintenanceMode = string(v.maintenance)
			info := ds.Info.GetDatastoreInfo()
			info.FreeSpace = v.free
			info.Timestamp = &now
			for j := range ds.Host {
				ds.Host[j].MountInfo.Accessible = types.NewBool(v.accessible)
				ds.Host[j].MountInfo.InaccessibleReason = ""
				if !v.accessible {
					ds.Host[j].MountInfo.InaccessibleReason = "AllPathsDown_Start"
				}
			}
			iorm := v.iorm
			ds.IormConfiguration = &iorm
			ds.OverallStatus = types.ManagedEntityStatusGreen
			if !v.accessible {
				ds.OverallStatus = types.ManagedEntityStatusRed
			}
		})
	}
}

// checkMaintenance completes the entry into maintenance of datastores that no VM file is left on.
// The caller holds no simulator object lock.
func (l *Lab) checkMaintenance(ctx *simulator.Context) {
	if l.finishMaintenance(ctx, l.inv.stores) {
		l.refreshPods(ctx)
	}
}

// checkMaintenanceOf does the same for one datastore, from its own SOAP handler.
func (l *Lab) checkMaintenanceOf(ctx *simulator.Context, d *dsInfo) {
	l.finishMaintenance(ctx, []*dsInfo{d})
}

func (l *Lab) finishMaintenance(ctx *simulator.Context, stores []*dsInfo) bool {
	var done []*dsInfo
	var waiters []*labTask
	l.mu.Lock()
	for _, d := range stores {
		if d.maintenance == types.DatastoreSummaryMaintenanceModeStateEnteringMaintenance && d.files == 0 && d.reserved == 0 {
			d.maintenance = types.DatastoreSummaryMaintenanceModeStateInMaintenance
			done = append(done, d)
			waiters = append(waiters, d.maintWaiters...)
			d.maintWaiters = nil
		}
	}
	l.mu.Unlock()
	if len(done) == 0 {
		return false
	}
	l.publishStores(ctx, done)
	for _, w := range waiters {
		w.succeed(nil)
	}
	return true
}

// SetAccessible makes a datastore accessible or not (an all-paths-down event): the datastore
// shows it and its disks stop doing IO in the physics.
func (l *Lab) SetAccessible(name string, accessible bool) error {
	d, ok := l.inv.storeByName[name]
	if !ok {
		return fmt.Errorf("datastore: unknown datastore %q", name)
	}
	if err := l.physics.SetAccessible(name, accessible); err != nil {
		return err
	}
	l.mu.Lock()
	d.accessible = accessible
	l.mu.Unlock()
	ctx := l.newContext()
	l.publishStores(ctx, []*dsInfo{d})
	l.refreshPods(ctx)
	return nil
}
