package vc

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// VirtualMachine is the lab's VM: Storage vMotion that copies on simulated time and moves disk
// backings for real, storageIOAllocation edits that reach the physics, power operations the
// physics sees. VMs a client creates are not in the scenario and keep the simulator's behaviour.
type VirtualMachine struct {
	*simulator.VirtualMachine
	lab *Lab
}

func (vm *VirtualMachine) info() *vmInfo { return vm.lab.inv.vmByRef[vm.Self.Value] }

// RelocateVMTask moves disks (per-disk DiskLocators) and/or the whole VM (spec.datastore), and
// optionally its host and pool.
func (vm *VirtualMachine) RelocateVMTask(ctx *simulator.Context, req *types.RelocateVM_Task) soap.HasFault {
	v := vm.info()
	if v == nil {
		return vm.VirtualMachine.RelocateVMTask(ctx, req)
	}
	l := vm.lab
	plan, err := l.planRelocation(ctx, v, &req.Spec)
	if err != nil {
		return &methods.RelocateVM_TaskBody{Fault_: simulator.Fault(err.msg, err.fault)}
	}
	task := l.newTask(ctx, vm.Self, "RelocateVM_Task", "relocate")
	l.mu.Lock()
	_, terr := l.relocs.submit(task, v, plan)
	l.mu.Unlock()
	if terr != nil {
		task.fail(terr.fault, terr.msg)
	} else {
		l.wake()
	}
	return &methods.RelocateVM_TaskBody{Res: &types.RelocateVM_TaskResponse{Returnval: task.ref()}}
}

// diskEdit is one edit of an existing disk in a ReconfigVM_Task spec.
type diskEdit struct {
	index int // position in spec.deviceChange
	next  *types.VirtualDisk
	cur   *types.VirtualDisk
	disk  *diskInfo
}

// ReconfigVMTask applies storageIOAllocation edits of the lab's disks itself, each to its own disk,
// and passes every other reconfiguration to the simulator.
func (vm *VirtualMachine) ReconfigVMTask(ctx *simulator.Context, req *types.ReconfigVM_Task) soap.HasFault {
	v := vm.info()
	var edits []diskEdit
	if v != nil {
		for i, ch := range req.Spec.DeviceChange {
			spec := ch.GetVirtualDeviceConfigSpec()
			next, ok := spec.Device.(*types.VirtualDisk)
			if !ok || spec.Operation != types.VirtualDeviceConfigSpecOperationEdit {
				continue
			}
			for _, d := range v.disks {
				if d.key == next.Key {
					cur := findDisk(vm.VirtualMachine, d.key)
					edits = append(edits, diskEdit{index: i, next: next, cur: cur, disk: d})
				}
			}
		}
	}
	if len(edits) == 0 {
		return vm.VirtualMachine.ReconfigVMTask(ctx, req)
	}
	rest := req.Spec
	rest.DeviceChange = nil
	if len(edits) != len(req.Spec.DeviceChange) || !reflect.DeepEqual(rest, types.VirtualMachineConfigSpec{}) {
		return &methods.ReconfigVM_TaskBody{Fault_: simulator.Fault(
			"The lab applies edits of its disks' storageIOAllocation in a reconfiguration of their own: "+
				"send other changes in a separate ReconfigVM_Task.", &types.NotSupported{})}
	}
	l := vm.lab
	task := l.newTask(ctx, vm.Self, "ReconfigVM_Task", "reconfigure")
	allocs := make([]ioAlloc, len(edits))
	var problems []string
	var firstBad string
	l.mu.Lock()
	for i, e := range edits {
		field := fmt.Sprintf("spec.deviceChange[%d].device", e.index)
		if b, ok := e.next.Backing.(types.BaseVirtualDeviceFileBackingInfo); ok {
			if name := b.GetVirtualDeviceFileBackingInfo().FileName; name != "" && name != e.disk.fileName(e.disk.ds) {
				problems = append(problems, field+".backing.fileName: a disk moves with RelocateVM_Task, not by editing its backing")
				firstBad = orFirst(firstBad, field+".backing.fileName")
			}
		}
		if c := e.next.CapacityInKB; c != 0 && c != e.disk.capacityKB {
			problems = append(problems, field+".capacityInKB: the lab does not resize disks")
			firstBad = orFirst(firstBad, field+".capacityInKB")
		}
		a, bad := mergeIOAllocation(e.disk.alloc, e.next.StorageIOAllocation, field+".storageIOAllocation")
		for _, p := range bad {
			problems = append(problems, p.msg)
			firstBad = orFirst(firstBad, p.field)
		}
		allocs[i] = a
	}
	l.mu.Unlock()
	if len(problems) > 0 {
		task.fail(&types.InvalidArgument{InvalidProperty: firstBad},
			"A specified parameter was not correct: "+strings.Join(problems, "; "))
		return &methods.ReconfigVM_TaskBody{Res: &types.ReconfigVM_TaskResponse{Returnval: task.ref()}}
	}
	task.running()
	mutate(ctx, vm.VirtualMachine, []string{"config.hardware.device"}, func() {
		for i, e := range edits {
			if e.cur != nil {
				e.cur.StorageIOAllocation = allocs[i].info()
			}
		}
	})
	l.mu.Lock()
	for i, e := range edits {
		e.disk.alloc = allocs[i]
	}
	l.mu.Unlock()
	for i, e := range edits {
		a := allocs[i]
		if err := l.physics.SetIOAllocation(e.disk.physicsKey(), a.reservation, a.limit, a.shares); err != nil {
			task.fail(&types.SystemError{Reason: err.Error()}, err.Error())
			return &methods.ReconfigVM_TaskBody{Res: &types.ReconfigVM_TaskResponse{Returnval: task.ref()}}
		}
	}
	task.succeed(nil)
	return &methods.ReconfigVM_TaskBody{Res: &types.ReconfigVM_TaskResponse{Returnval: task.ref()}}
}

func orFirst(first, field string) string {
	if first == "" {
		return field
	}
	return first
}

type fieldProblem struct{ field, msg string }

// mergeIOAllocation applies a storageIOAllocation edit to a disk's current one: unset fields keep
// their value (as vSphere treats them), shares levels set the number of shares.
func mergeIOAllocation(cur ioAlloc, in *types.StorageIOAllocationInfo, field string) (ioAlloc, []fieldProblem) {
	next := cur
	if in == nil {
		return next, nil
	}
	var bad []fieldProblem
	if in.Limit != nil {
		if l := *in.Limit; l != -1 && l <= 0 {
			bad = append(bad, fieldProblem{field + ".limit", fmt.Sprintf("%s.limit: must be -1 (unlimited) or a positive number of IOPS, got %d", field, l)})
		} else {
			next.limit = l
		}
	}
	if in.Reservation != nil {
		if r := *in.Reservation; r < 0 {
			bad = append(bad, fieldProblem{field + ".reservation", fmt.Sprintf("%s.reservation: must be zero or a positive number of IOPS, got %d", field, r)})
		} else {
			next.reservation = int64(r)
		}
	}
	if s := in.Shares; s != nil {
		switch s.Level {
		case types.SharesLevelLow:
			next.level, next.shares = s.Level, 500
		case types.SharesLevelNormal:
			next.level, next.shares = s.Level, 1000
		case types.SharesLevelHigh:
			next.level, next.shares = s.Level, 2000
		case types.SharesLevelCustom:
			if s.Shares < 1 || s.Shares > 1_000_000 {
				bad = append(bad, fieldProblem{field + ".shares.shares", fmt.Sprintf("%s.shares.shares: custom shares must be between 1 and 1000000, got %d", field, s.Shares)})
			} else {
				next.level, next.shares = s.Level, s.Shares
			}
		default:
			bad = append(bad, fieldProblem{field + ".shares.level", fmt.Sprintf("%s.shares.level: must be low, normal, high or custom, got %q", field, s.Level)})
		}
	}
	if len(bad) == 0 && next.limit > 0 && next.reservation > next.limit {
		bad = append(bad, fieldProblem{field + ".reservation", fmt.Sprintf("%s.reservation: %d IOPS is above the limit of %d IOPS", field, next.reservation, next.limit)})
	}
	return next, bad
}

func findDisk(vm *simulator.VirtualMachine, key int32) *types.VirtualDisk {
	for _, dev := range vm.Config.Hardware.Device {
		if d, ok := dev.(*types.VirtualDisk); ok && d.Key == key {
			return d
		}
	}
	return nil
}

var powerRoots = []string{"runtime.powerState", "runtime.bootTime", "summary.runtime.powerState", "summary.runtime.bootTime"}

// PowerOnVMTask powers the VM on; its disks start their workloads in the physics.
func (vm *VirtualMachine) PowerOnVMTask(ctx *simulator.Context, req *types.PowerOnVM_Task) soap.HasFault {
	if vm.info() == nil {
		return vm.VirtualMachine.PowerOnVMTask(ctx, req)
	}
	return &methods.PowerOnVM_TaskBody{Res: &types.PowerOnVM_TaskResponse{Returnval: vm.power(ctx, true)}}
}

// PowerOffVMTask powers the VM off; its disks stop doing IO.
func (vm *VirtualMachine) PowerOffVMTask(ctx *simulator.Context, req *types.PowerOffVM_Task) soap.HasFault {
	if vm.info() == nil {
		return vm.VirtualMachine.PowerOffVMTask(ctx, req)
	}
	return &methods.PowerOffVM_TaskBody{Res: &types.PowerOffVM_TaskResponse{Returnval: vm.power(ctx, false)}}
}

func (vm *VirtualMachine) power(ctx *simulator.Context, on bool) types.ManagedObjectReference {
	l := vm.lab
	method, id, want := "PowerOffVM_Task", "powerOff", types.VirtualMachinePowerStatePoweredOff
	if on {
		method, id, want = "PowerOnVM_Task", "powerOn", types.VirtualMachinePowerStatePoweredOn
	}
	task := l.newTask(ctx, vm.Self, method, id)
	if vm.Runtime.PowerState == want {
		task.fail(&types.InvalidPowerState{RequestedState: want, ExistingState: vm.Runtime.PowerState},
			fmt.Sprintf("The attempted operation cannot be performed in the current state (%s).", vm.Runtime.PowerState))
		return task.ref()
	}
	task.running()
	mutate(ctx, vm.VirtualMachine, powerRoots, func() {
		vm.Runtime.PowerState = want
		vm.Runtime.BootTime = nil
		if on {
			vm.Runtime.BootTime = l.simNow()
		}
		vm.Summary.Runtime.PowerState = want
		vm.Summary.Runtime.BootTime = vm.Runtime.BootTime
	})
	v := vm.info()
	l.mu.Lock()
	v.poweredOn = on
	l.mu.Unlock()
	_ = l.physics.SetPower(v.name, on)
	task.succeed(nil)
	return task.ref()
}

// RefreshStorageInfo succeeds without rescanning: the lab's file layout is authoritative (its
// datastores hold no files the simulator could scan).
func (vm *VirtualMachine) RefreshStorageInfo(ctx *simulator.Context, _ *types.RefreshStorageInfo) soap.HasFault {
	now := vm.lab.clock.Now()
	mutate(ctx, vm.VirtualMachine, []string{"storage.timestamp", "layoutEx.timestamp", "summary.storage.timestamp"}, func() {
		if vm.Storage != nil {
			vm.Storage.Timestamp = now
		}
		if vm.LayoutEx != nil {
			vm.LayoutEx.Timestamp = now
		}
		if vm.Summary.Storage != nil {
			vm.Summary.Storage.Timestamp = now
		}
	})
	return &methods.RefreshStorageInfoBody{Res: &types.RefreshStorageInfoResponse{}}
}
