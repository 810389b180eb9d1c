package vc

import (
	"fmt"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// StorageResourceManager is the lab's: Storage I/O Control configured per datastore, reflected in
// datastore.iormConfiguration and enforced by the physics.
type StorageResourceManager struct {
	*simulator.StorageResourceManager
	lab *Lab
}

// SIOC congestion threshold bounds, as vSphere accepts them.
const (
	minCongestionMs = 5
	maxCongestionMs = 100
	defaultCongMs   = 30
	minPeakPct      = 50
	maxPeakPct      = 100
	defaultPeakPct  = 90
)

// QueryIORMConfigOption returns the options of SIOC configuration.
func (m *StorageResourceManager) QueryIORMConfigOption(ctx *simulator.Context, req *types.QueryIORMConfigOption) soap.HasFault {
	if _, ok := ctx.Map.Get(req.Host).(*simulator.HostSystem); !ok {
		return &methods.QueryIORMConfigOptionBody{Fault_: notFound(req.Host)}
	}
	return &methods.QueryIORMConfigOptionBody{Res: &types.QueryIORMConfigOptionResponse{Returnval: types.StorageIORMConfigOption{
		EnabledOption:                types.BoolOption{Supported: true, DefaultValue: false},
		CongestionThresholdOption:    types.IntOption{Min: minCongestionMs, Max: maxCongestionMs, DefaultValue: defaultCongMs},
		StatsCollectionEnabledOption: types.BoolOption{Supported: true, DefaultValue: true},
		ReservationEnabledOption:     types.BoolOption{Supported: true, DefaultValue: true},
	}}}
}

// ConfigureDatastoreIORMTask changes a datastore's SIOC configuration; unset fields keep their
// value. Invalid fields fail the task naming every one of them, and change nothing.
func (m *StorageResourceManager) ConfigureDatastoreIORMTask(ctx *simulator.Context, req *types.ConfigureDatastoreIORM_Task) soap.HasFault {
	l := m.lab
	d, ok := l.inv.storeByRef[req.Datastore.Value]
	if !ok || req.Datastore.Type != "Datastore" {
		return &methods.ConfigureDatastoreIORM_TaskBody{Fault_: notFound(req.Datastore)}
	}
	// vCenter runs the task on the datastore it configures.
	task := l.newTask(ctx, req.Datastore, "ConfigureDatastoreIORM_Task", "configureDatastoreIORM")
	task.task.Info.DescriptionId = "StorageResourceManager.configureDatastoreIORM"
	respond := func() soap.HasFault {
		return &methods.ConfigureDatastoreIORM_TaskBody{Res: &types.ConfigureDatastoreIORM_TaskResponse{Returnval: task.ref()}}
	}
	if k := d.sc.Type; k == "vsan" || k == "VVOL" {
		task.fail(&types.NotSupported{}, fmt.Sprintf("Storage I/O Control is not supported on %s datastore '%s'.", k, d.name))
		return respond()
	}
	l.mu.Lock()
	next := d.iorm
	l.mu.Unlock()
	spec := req.Spec
	var problems []string
	var first string
	bad := func(field, format string, args ...any) {
		if first == "" {
			first = field
		}
		problems = append(problems, field+": "+fmt.Sprintf(format, args...))
	}
	if spec.Enabled != nil {
		next.Enabled = *spec.Enabled
	}
	switch spec.CongestionThresholdMode {
	case "":
	case string(types.StorageIORMThresholdModeAutomatic), string(types.StorageIORMThresholdModeManual):
		next.CongestionThresholdMode = spec.CongestionThresholdMode
	default:
		bad("spec.congestionThresholdMode", "must be automatic or manual, got %q", spec.CongestionThresholdMode)
	}
	if t := spec.CongestionThreshold; t != 0 {
		if t < minCongestionMs || t > maxCongestionMs {
			bad("spec.congestionThreshold", "must be between %d and %d ms, got %d", minCongestionMs, maxCongestionMs, t)
		} else {
			next.CongestionThreshold = t
		}
	}
	if p := spec.PercentOfPeakThroughput; p != 0 {
		if p < minPeakPct || p > maxPeakPct {
			bad("spec.percentOfPeakThroughput", "must be between %d and %d, got %d", minPeakPct, maxPeakPct, p)
		} else {
			next.PercentOfPeakThroughput = p
		}
	}
	if spec.StatsCollectionEnabled != nil {
		next.StatsCollectionEnabled = *spec.StatsCollectionEnabled
	}
	if spec.ReservationEnabled != nil {
		next.ReservationEnabled = *spec.ReservationEnabled
	}
	if spec.StatsAggregationDisabled != nil {
		v := *spec.StatsAggregationDisabled
		next.StatsAggregationDisabled = &v
	}
	if len(problems) > 0 {
		task.fail(&types.InvalidArgument{InvalidProperty: first}, "A specified parameter was not correct: "+strings.Join(problems, "; "))
		return respond()
	}
	if next.CongestionThreshold == 0 {
		next.CongestionThreshold = defaultCongMs
	}
	if next.PercentOfPeakThroughput == 0 {
		next.PercentOfPeakThroughput = defaultPeakPct
	}
	if next.CongestionThresholdMode == "" {
		next.CongestionThresholdMode = string(types.StorageIORMThresholdModeManual)
	}
	task.running()
	var err error
	if next.CongestionThresholdMode == string(types.StorageIORMThresholdModeAutomatic) {
		err = l.physics.SetSIOCAutomatic(d.name, next.Enabled, float64(next.PercentOfPeakThroughput))
	} else {
		err = l.physics.SetSIOC(d.name, next.Enabled, float64(next.CongestionThreshold))
	}
	if err != nil {
		task.fail(&types.SystemError{Reason: err.Error()}, err.Error())
		return respond()
	}
	l.mu.Lock()
	d.iorm = next
	l.mu.Unlock()
	l.publishStores(ctx, []*dsInfo{d})
	l.refreshPodsLater()
	task.succeed(nil)
	return respond()
}
