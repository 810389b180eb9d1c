package vc

import (
	"context"
	"testing"

	"github.com/vmware/govmomi/vim25/types"
)

func TestReconfigStorageIOAllocation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		alloc  types.StorageIOAllocationInfo
		want   string // fault
		limit  int64
		shares int32
		res    int64
	}{
		{name: "limit and custom shares", alloc: types.StorageIOAllocationInfo{
			Limit: types.NewInt64(300), Shares: &types.SharesInfo{Level: types.SharesLevelCustom, Shares: 3000}},
			limit: 300, shares: 3000},
		{name: "level high sets 2000 shares", alloc: types.StorageIOAllocationInfo{
			Shares: &types.SharesInfo{Level: types.SharesLevelHigh, Shares: 7}},
			limit: -1, shares: 2000},
		{name: "reservation", alloc: types.StorageIOAllocationInfo{Reservation: types.NewInt32(150)},
			limit: -1, shares: 1000, res: 150},
		{name: "zero limit refused", alloc: types.StorageIOAllocationInfo{Limit: types.NewInt64(0)},
			want: "InvalidArgument", limit: -1, shares: 1000},
		{name: "reservation above limit refused", alloc: types.StorageIOAllocationInfo{
			Limit: types.NewInt64(100), Reservation: types.NewInt32(200)},
			want: "InvalidArgument", limit: -1, shares: 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTestLab(t, testScenario)
			ctx := context.Background()
			vm := tl.vm(t, "vm-1")
			d := disks(tl.vmMO(t, "vm-1"))["scsi0:1"]
			alloc := tc.alloc
			d.StorageIOAllocation = &alloc
			tk, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{DeviceChange: []types.BaseVirtualDeviceConfigSpec{
				&types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationEdit, Device: d},
			}})
			if err != nil {
				t.Fatal(err)
			}
			if got := typeName(tl.waitTask(t, tk, 0)); got != tc.want {
				t.Fatalf("fault %q, want %q", got, tc.want)
			}
			after := disks(tl.vmMO(t, "vm-1"))
			a := after["scsi0:1"].StorageIOAllocation
			if *a.Limit != tc.limit || a.Shares.Shares != tc.shares || int64(*a.Reservation) != tc.res {
				t.Errorf("scsi0:1 storageIOAllocation = limit %d shares %d reservation %d, want %d %d %d",
					*a.Limit, a.Shares.Shares, *a.Reservation, tc.limit, tc.shares, tc.res)
			}
			o := after["scsi0:0"].StorageIOAllocation
			if *o.Limit != -1 || o.Shares.Shares != 1000 || *o.Reservation != 0 {
				t.Errorf("the other disk's allocation changed: %d %d %d", *o.Limit, o.Shares.Shares, *o.Reservation)
			}
			var placed *DiskPlacement
			for _, v := range tl.Placement().VMs {
				for i := range v.Disks {
					if v.Name == "vm-1" && v.Disks[i].Unit == "scsi0:1" {
						placed = &v.Disks[i]
					}
				}
			}
			if placed.Limit != tc.limit || placed.Shares != tc.shares || placed.Reservation != tc.res {
				t.Errorf("the lab's record is %+v", placed)
			}
		})
	}
}

func TestPowerOffStopsIO(t *testing.T) {
	tl := newTestLab(t, testScenario)
	ctx := context.Background()
	tk, err := tl.vm(t, "vm-2").PowerOff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if f := tl.waitTask(t, tk, 0); f != nil {
		t.Fatalf("power off failed: %T", f)
	}
	if got := tl.vmMO(t, "vm-2").Runtime.PowerState; got != types.VirtualMachinePowerStatePoweredOff {
		t.Fatalf("power state %s", got)
	}
	tl.step(t, 1)
	truth, err := tl.GroundTruth(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range truth.Disks {
		if d.VM == "vm-2" && d.IOPS != 0 {
			t.Errorf("a powered-off VM does %v IOPS", d.IOPS)
		}
	}
	tk, _ = tl.vm(t, "vm-2").PowerOff(ctx)
	if got := typeName(tl.waitTask(t, tk, 0)); got != "InvalidPowerState" {
		t.Errorf("powering off twice: fault %q, want InvalidPowerState", got)
	}
}
