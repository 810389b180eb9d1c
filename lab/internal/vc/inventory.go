package vc

import (
	"context"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/basil-project/basil/lab/internal/physics"
	"github.com/basil-project/basil/lab/internal/scenario"
)

// The lab's view of the inventory: what each simulator object stands for in the scenario and
// where every disk lives. Fields that change after the build are guarded by Lab.mu.
type inventory struct {
	dc                             types.ManagedObjectReference
	vmFolder, hostFolder, dsFolder types.ManagedObjectReference

	hosts      []*hostInfo
	hostByName map[string]*hostInfo
	hostByRef  map[string]*hostInfo // by moid

	stores      []*dsInfo
	storeByName map[string]*dsInfo
	storeByRef  map[string]*dsInfo

	vms      []*vmInfo
	vmByName map[string]*vmInfo
	vmByRef  map[string]*vmInfo

	disks []*diskInfo

	// pairs are the mounted host-datastore pairs: the instances of host-level datastore.* counters.
	pairs []hostDS

	pods map[string]types.ManagedObjectReference
}

type hostDS struct {
	host  *hostInfo
	store *dsInfo
}

type hostInfo struct {
	idx   int
	name  string
	ref   types.ManagedObjectReference
	pool  types.ManagedObjectReference
	pairs []int // indexes into inventory.pairs, in datastore order
}

type dsInfo struct {
	idx  int
	name string
	ref  types.ManagedObjectReference
	sc   *scenario.Datastore
	// uuid is the volume id in the datastore's URL (ds:///vmfs/volumes/<uuid>/), which vCenter
	// also uses as the instance of host-level datastore.* counters.
	uuid string
	url  string

	capacity int64
	baseUsed int64 // space taken by files the scenario does not model
	files    int64 // space taken by the lab's VM files
	reserved int64 // space held by copies in flight

	mounted     map[*hostInfo]bool
	accessible  bool
	maintenance types.DatastoreSummaryMaintenanceModeState
	iorm        types.StorageIORMInfo
	// maintWaiters are DatastoreEnterMaintenanceMode tasks waiting for the datastore to empty.
	maintWaiters []*labTask
}

func (d *dsInfo) free() int64 { return d.capacity - d.baseUsed - d.files - d.reserved }

type vmInfo struct {
	idx       int
	name      string
	ref       types.ManagedObjectReference
	host      *hostInfo
	home      *dsInfo // datastore of the configuration files
	disks     []*diskInfo
	poweredOn bool
	busy      *relocation // the relocation queued or running for this VM
}

type diskInfo struct {
	idx        int
	vm         *vmInfo
	unit       string // "scsi0:1": the perf instance
	key        int32
	ordinal    int // position among the VM's disks: names the file
	capacityKB int64
	thin       bool
	ds         *dsInfo
	alloc      ioAlloc
}

type ioAlloc struct {
	reservation int64
	limit       int64 // -1 unlimited
	level       types.SharesLevel
	shares      int32
}

func (d *diskInfo) physicsKey() physics.DiskKey { return physics.DiskKey{VM: d.vm.name, Unit: d.unit} }

// fileName is the disk's datastore path, "[ds] vm/vm_1.vmdk" (vCenter names the first disk
// "vm.vmdk" and the next ones "vm_1.vmdk", "vm_2.vmdk", ...).
func (d *diskInfo) fileName(ds *dsInfo) string {
	return fmt.Sprintf("[%s] %s", ds.name, d.relPath())
}

func (d *diskInfo) relPath() string {
	if d.ordinal == 0 {
		return fmt.Sprintf("%s/%s.vmdk", d.vm.name, d.vm.name)
	}
	return fmt.Sprintf("%s/%s_%d.vmdk", d.vm.name, d.vm.name, d.ordinal)
}

func (d *diskInfo) bytes() int64 { return d.capacityKB*1024 + descriptorSize }

// Sizes of the files a VM keeps beside its disks, as a freshly created VM on ESXi has them.
const (
	vmxSize        = 3 * 1024
	nvramSize      = 8684
	logSize        = 256 * 1024
	descriptorSize = 512
	homeBytes      = vmxSize + nvramSize + logSize
)

// buildInventory creates the scenario's datacenter in the simulator: clusters and hosts through
// the simulator's own API, datastores as local directories for the time VMs are created, VMs
// directly (the simulator's CreateVM writes every file of every VM, far too slow at scale).
func (l *Lab) buildInventory(dir string) (*inventory, error) {
	s := l.Scenario
	ctx := context.Background()
	sctx := l.newContext()
	c, err := vim25.NewClient(ctx, l.model.Service)
	if err != nil {
		return nil, err
	}
	inv := &inventory{
		hostByName: map[string]*hostInfo{}, hostByRef: map[string]*hostInfo{},
		storeByName: map[string]*dsInfo{}, storeByRef: map[string]*dsInfo{},
		vmByName: map[string]*vmInfo{}, vmByRef: map[string]*vmInfo{},
		pods: map[string]types.ManagedObjectReference{},
	}

	dc, err := object.NewRootFolder(c).CreateDatacenter(ctx, s.Datacenter)
	if err != nil {
		return nil, fmt.Errorf("datacenter: %w", err)
	}
	folders, err := dc.Folders(ctx)
	if err != nil {
		return nil, err
	}
	inv.dc = dc.Reference()
	inv.vmFolder, inv.hostFolder, inv.dsFolder = folders.VmFolder.Reference(), folders.HostFolder.Reference(), folders.DatastoreFolder.Reference()

	if err := l.addHosts(ctx, sctx, c, folders, inv); err != nil {
		return nil, err
	}
	if err := l.addDatastores(ctx, sctx, c, folders, inv, dir); err != nil {
		return nil, err
	}
	for i := range s.VMs {
		if err := l.addVM(sctx, inv, &s.VMs[i]); err != nil {
			return nil, fmt.Errorf("VM %q: %w", s.VMs[i].Name, err)
		}
	}
	for _, ds := range inv.stores {
		if ds.free() < 0 {
			return nil, fmt.Errorf("datastore %q: its files do not fit", ds.name)
		}
	}
	return inv, nil
}

func (l *Lab) addHosts(ctx context.Context, sctx *simulator.Context, c *vim25.Client, folders *object.DatacenterFolders, inv *inventory) error {
	s := l.Scenario
	clusters := map[string]*object.ClusterComputeResource{}
	for _, cl := range s.Clusters {
		obj, err := folders.HostFolder.CreateCluster(ctx, cl.Name, types.ClusterConfigSpecEx{})
		if err != nil {
			return fmt.Errorf("cluster %q: %w", cl.Name, err)
		}
		clusters[cl.Name] = obj
	}
	tasks := make([]*object.Task, len(s.Hosts))
	for i, h := range s.Hosts {
		spec := types.HostConnectSpec{HostName: h.Name}
		var err error
		if h.Cluster != "" {
			tasks[i], err = clusters[h.Cluster].AddHost(ctx, spec, true, nil, nil)
		} else {
			tasks[i], err = folders.HostFolder.AddStandaloneHost(ctx, spec, true, nil, nil)
		}
		if err != nil {
			return fmt.Errorf("host %q: %w", h.Name, err)
		}
	}
	for i, h := range s.Hosts {
		info, err := tasks[i].WaitForResult(ctx, nil)
		if err != nil {
			return fmt.Errorf("host %q: %w", h.Name, err)
		}
		ref := info.Result.(types.ManagedObjectReference)
		hi := &hostInfo{idx: i, name: h.Name, ref: ref}
		host := sctx.Map.Get(ref).(*simulator.HostSystem)
		switch cr := sctx.Map.Get(*host.Parent).(type) {
		case *simulator.ClusterComputeResource:
			hi.pool = *cr.ResourcePool
		case *mo.ComputeResource:
			hi.pool = *cr.ResourcePool
		default:
			return fmt.Errorf("host %q: unexpected parent %T", h.Name, cr)
		}
		inv.hosts = append(inv.hosts, hi)
		inv.hostByName[h.Name] = hi
		inv.hostByRef[ref.Value] = hi
	}
	return nil
}

func (l *Lab) addDatastores(ctx context.Context, sctx *simulator.Context, c *vim25.Client, folders *object.DatacenterFolders, inv *inventory, dir string) error {
	s := l.Scenario
	dss := make([]*object.HostDatastoreSystem, len(inv.hosts))
	for i, h := range inv.hosts {
		var err error
		if dss[i], err = object.NewHostSystem(c, h.ref).ConfigManager().DatastoreSystem(ctx); err != nil {
			return err
		}
	}
	for i := range s.Datastores {
		sd := &s.Datastores[i]
		path := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(path, 0o700); err != nil {
			return err
		}
		d := &dsInfo{
			idx: i, name: sd.Name, sc: sd, mounted: map[*hostInfo]bool{},
			capacity: gib(sd.CapacityGB), baseUsed: gib(sd.UsedGB), accessible: !sd.Inaccessible,
			maintenance: types.DatastoreSummaryMaintenanceModeStateNormal,
		}
		if sd.Maintenance {
			d.maintenance = types.DatastoreSummaryMaintenanceModeStateInMaintenance
		}
		d.uuid = volumeUUID(s.Seed, sd)
		d.url = "ds:///vmfs/volumes/" + d.uuid + "/"
		d.iorm = types.StorageIORMInfo{
			Enabled:                 sd.SIOC.Enabled,
			CongestionThresholdMode: sd.SIOC.ThresholdMode,
			CongestionThreshold:     int32(math.Round(sd.SIOC.ThresholdMs)),
			PercentOfPeakThroughput: int32(math.Round(sd.SIOC.PeakPct)),
			StatsCollectionEnabled:  true,
			ReservationEnabled:      true,
		}
		for _, hn := range sd.Hosts {
			h := inv.hostByName[hn]
			ref, err := dss[h.idx].CreateLocalDatastore(ctx, sd.Name, path)
			if err != nil {
				return fmt.Errorf("datastore %q on %q: %w", sd.Name, hn, err)
			}
			// The simulator answers a second host's mount of an existing datastore with an empty
			// reference; the first host's is the datastore's.
			if d.ref.Value == "" {
				d.ref = ref.Reference()
			}
			d.mounted[h] = true
		}
		inv.stores = append(inv.stores, d)
		inv.storeByName[d.name] = d
		inv.storeByRef[d.ref.Value] = d
	}
	for _, h := range inv.hosts {
		for _, d := range inv.stores {
			if d.mounted[h] {
				h.pairs = append(h.pairs, len(inv.pairs))
				inv.pairs = append(inv.pairs, hostDS{host: h, store: d})
			}
		}
	}
	// Datastore clusters, in order of first mention.
	for _, d := range inv.stores {
		if d.sc.Pod == "" {
			continue
		}
		pod, ok := inv.pods[d.sc.Pod]
		if !ok {
			obj, err := folders.DatastoreFolder.CreateStoragePod(ctx, d.sc.Pod)
			if err != nil {
				return fmt.Errorf("datastore cluster %q: %w", d.sc.Pod, err)
			}
			pod = obj.Reference()
			inv.pods[d.sc.Pod] = pod
		}
		if f := movePodMembers(sctx, pod, []types.ManagedObjectReference{d.ref}); f != nil {
			return fmt.Errorf("datastore cluster %q: %s", d.sc.Pod, f.msg)
		}
	}
	return nil
}

func (l *Lab) addVM(ctx *simulator.Context, inv *inventory, sv *scenario.VM) error {
	host := inv.hostByName[sv.Host]
	v := &vmInfo{idx: len(inv.vms), name: sv.Name, host: host, poweredOn: sv.IsPoweredOn()}
	for j := range sv.Disks {
		sd := &sv.Disks[j]
		bus, unit := diskBus(sd.Unit)
		busNum := int(bus[len(bus)-1] - '0')
		d := &diskInfo{
			idx: len(inv.disks), vm: v, unit: sd.Unit, ordinal: j, thin: sd.Thin,
			capacityKB: int64(math.Round(sd.SizeGB * 1024 * 1024)), ds: inv.storeByName[sd.Datastore],
			key: diskKey(bus, busNum, unit),
		}
		level, shares := sd.IO.Shares.Resolve()
		d.alloc = ioAlloc{reservation: sd.IO.Reservation, limit: sd.IO.LimitIOPS(), level: types.SharesLevel(level), shares: shares}
		v.disks = append(v.disks, d)
		inv.disks = append(inv.disks, d)
	}
	if len(v.disks) > 0 {
		v.home = v.disks[0].ds
	} else {
		for _, d := range inv.stores {
			if d.mounted[host] {
				v.home = d
				break
			}
		}
		if v.home == nil {
			return fmt.Errorf("host %q mounts no datastore for the VM's files", host.name)
		}
	}

	spec := types.VirtualMachineConfigSpec{
		Name: sv.Name, GuestId: string(types.VirtualMachineGuestOsIdentifierOtherGuest64),
		NumCPUs: 2, MemoryMB: 4096,
		Files: &types.VirtualMachineFileInfo{VmPathName: "[" + v.home.name + "]"},
	}
	vm, fault := simulator.NewVirtualMachine(ctx, inv.vmFolder, &spec)
	if fault != nil {
		return fmt.Errorf("create: %T", fault)
	}
	v.ref = vm.Self
	// NewVirtualMachine applies only the defaults; CreateVM would apply the spec when it writes the
	// VM's files, which the lab skips.
	vm.Name, vm.Config.Name, vm.Summary.Config.Name = sv.Name, sv.Name, sv.Name
	vm.Config.GuestId, vm.Config.GuestFullName = spec.GuestId, "Other (64-bit)"
	vm.Summary.Config.GuestId, vm.Summary.Config.GuestFullName = spec.GuestId, vm.Config.GuestFullName
	vm.Config.Hardware.NumCPU, vm.Summary.Config.NumCpu = spec.NumCPUs, spec.NumCPUs
	vm.Config.Hardware.MemoryMB, vm.Summary.Config.MemorySizeMB = int32(spec.MemoryMB), int32(spec.MemoryMB)
	vm.Config.Modified = l.clock.Now()
	vm.ResourcePool = &host.pool
	vm.Runtime.Host = &host.ref
	vm.Summary.Runtime.Host = &host.ref
	vm.Guest = &types.GuestInfo{
		ToolsStatus:        types.VirtualMachineToolsStatusToolsNotInstalled,
		ToolsVersion:       "0",
		ToolsRunningStatus: string(types.VirtualMachineToolsRunningStatusGuestToolsNotRunning),
	}
	vm.Summary.Guest = &types.VirtualMachineGuestSummary{ToolsStatus: vm.Guest.ToolsStatus}
	vm.Summary.Config.VmPathName = vm.Config.Files.VmPathName

	hs := ctx.Map.Get(host.ref).(*simulator.HostSystem)
	hs.Vm = append(hs.Vm, vm.Self)
	switch cr := ctx.Map.Get(*hs.Parent).(type) {
	case *simulator.ClusterComputeResource:
		vm.EnvironmentBrowser = *cr.EnvironmentBrowser
	case *mo.ComputeResource:
		vm.EnvironmentBrowser = *cr.EnvironmentBrowser
	}
	if rp, ok := ctx.Map.Get(host.pool).(*simulator.ResourcePool); ok {
		rp.Vm = append(rp.Vm, vm.Self)
	}

	// Enumerations a real vCenter always fills; clients fail to decode them empty.
	vm.Runtime.FaultToleranceState = types.VirtualMachineFaultToleranceStateNotConfigured
	vm.Runtime.RecordReplayState = types.VirtualMachineRecordReplayStateInactive
	vm.Guest.GuestState = string(types.VirtualMachineGuestStateNotRunning)

	addDiskDevices(vm, v)
	if v.poweredOn {
		vm.Runtime.PowerState = types.VirtualMachinePowerStatePoweredOn
		boot := l.clock.Now()
		vm.Runtime.BootTime = &boot
	}
	vm.Summary.Runtime = vm.Runtime

	inv.vms = append(inv.vms, v)
	inv.vmByName[v.name] = v
	inv.vmByRef[v.ref.Value] = v
	for ds, bytes := range vmFootprint(v) {
		ds.files += bytes
	}
	l.applyLayout(ctx, vm, v)
	for _, ref := range vm.Datastore {
		dso := ctx.Map.Get(ref).(*simulator.Datastore)
		dso.Vm = append(dso.Vm, vm.Self)
	}
	return nil
}

// diskKey numbers disks the way vSphere does: 2000 upwards on SCSI (16 units per bus), and
// separate ranges for the other controller kinds.
func diskKey(bus string, busNum, unit int) int32 {
	switch bus[:len(bus)-1] {
	case "sata":
		return int32(16000 + 30*busNum + unit)
	case "nvme":
		return int32(32000 + 64*busNum + unit)
	case "ide":
		return int32(3000 + 2*busNum + unit)
	default:
		return int32(2000 + 16*busNum + unit)
	}
}

// addDiskDevices adds the scenario's controllers and disks to a VM's hardware.
func addDiskDevices(vm *simulator.VirtualMachine, v *vmInfo) {
	devices := object.VirtualDeviceList(vm.Config.Hardware.Device)
	var pci *types.VirtualPCIController
	for _, d := range devices {
		if c, ok := d.(*types.VirtualPCIController); ok {
			pci = c
		}
	}
	controllers := map[string]types.BaseVirtualController{}
	for _, d := range devices {
		if c, ok := d.(*types.VirtualIDEController); ok {
			controllers[fmt.Sprintf("ide%d", c.BusNumber)] = c
		}
	}
	slot := int32(3)
	controller := func(name string) types.BaseVirtualController {
		if c, ok := controllers[name]; ok {
			return c
		}
		kind := name[:len(name)-1]
		bus := int32(name[len(name)-1] - '0')
		var c types.BaseVirtualController
		base := types.VirtualController{BusNumber: bus, VirtualDevice: types.VirtualDevice{ControllerKey: pci.Key, UnitNumber: types.NewInt32(slot)}}
		slot++
		switch kind {
		case "sata":
			base.Key = 15000 + bus
			base.DeviceInfo = &types.Description{Label: fmt.Sprintf("SATA controller %d", bus), Summary: "AHCI"}
			c = &types.VirtualAHCIController{VirtualSATAController: types.VirtualSATAController{VirtualController: base}}
		case "nvme":
			base.Key = 31000 + bus
			base.DeviceInfo = &types.Description{Label: fmt.Sprintf("NVME controller %d", bus), Summary: "NVME controller"}
			c = &types.VirtualNVMEController{VirtualController: base}
		default:
			base.Key = 1000 + bus
			base.DeviceInfo = &types.Description{Label: fmt.Sprintf("SCSI controller %d", bus), Summary: "VMware paravirtual SCSI"}
			c = &types.ParaVirtualSCSIController{VirtualSCSIController: types.VirtualSCSIController{
				VirtualController: base, SharedBus: types.VirtualSCSISharingNoSharing, ScsiCtlrUnitNumber: 7,
			}}
		}
		pci.Device = append(pci.Device, base.Key)
		devices = append(devices, c.(types.BaseVirtualDevice))
		controllers[name] = c
		return c
	}
	for n, d := range v.disks {
		bus, unit := diskBus(d.unit)
		ctrl := controller(bus)
		vc := ctrl.GetVirtualController()
		vc.Device = append(vc.Device, d.key)
		capBytes := d.capacityKB * 1024
		disk := &types.VirtualDisk{
			VirtualDevice: types.VirtualDevice{
				Key:           d.key,
				ControllerKey: vc.Key,
				UnitNumber:    types.NewInt32(int32(unit)),
				DeviceInfo: &types.Description{
					Label:   fmt.Sprintf("Hard disk %d", n+1),
					Summary: groupThousands(d.capacityKB) + " KB",
				},
				Backing: &types.VirtualDiskFlatVer2BackingInfo{
					VirtualDeviceFileBackingInfo: types.VirtualDeviceFileBackingInfo{
						FileName: d.fileName(d.ds), Datastore: &d.ds.ref,
					},
					DiskMode:        string(types.VirtualDiskModePersistent),
					ThinProvisioned: types.NewBool(d.thin),
					EagerlyScrub:    types.NewBool(false),
					Split:           types.NewBool(false),
					WriteThrough:    types.NewBool(false),
					DigestEnabled:   types.NewBool(false),
					Uuid:            stableUUID(int64(d.idx), "disk", v.name+"/"+d.unit),
				},
			},
			CapacityInKB:        d.capacityKB,
			CapacityInBytes:     capBytes,
			DiskObjectId:        fmt.Sprintf("%s-%d", strings.TrimPrefix(v.ref.Value, "vm-"), d.key),
			StorageIOAllocation: d.alloc.info(),
		}
		devices = append(devices, disk)
	}
	vm.Config.Hardware.Device = devices
	vm.Summary.Config.NumVirtualDisks = int32(len(v.disks))
}

// diskBus splits "scsi0:1" into "scsi0" and 1.
func diskBus(unit string) (string, int) {
	i := strings.LastIndexByte(unit, ':')
	n, _ := strconv.Atoi(unit[i+1:])
	return unit[:i], n
}

func (a ioAlloc) info() *types.StorageIOAllocationInfo {
	limit := a.limit
	res := int32(a.reservation)
	return &types.StorageIOAllocationInfo{
		Limit:       &limit,
		Reservation: &res,
		Shares:      &types.SharesInfo{Shares: a.shares, Level: a.level},
	}
}

// vmFootprint is the space a VM's files take on each datastore.
func vmFootprint(v *vmInfo) map[*dsInfo]int64 {
	out := map[*dsInfo]int64{v.home: homeBytes}
	for _, d := range v.disks {
		out[d.ds] += d.bytes()
	}
	return out
}

// applyLayout sets the VM's file layout, datastores and storage usage from the lab's placement.
// The caller holds the VM's lock (or owns the VM, while building).
func (l *Lab) applyLayout(ctx *simulator.Context, vm *simulator.VirtualMachine, v *vmInfo) {
	now := l.clock.Now()
	homeDir := fmt.Sprintf("[%s] %s", v.home.name, v.name)
	vm.Config.Files.VmPathName = fmt.Sprintf("%s/%s.vmx", homeDir, v.name)
	vm.Config.Files.SnapshotDirectory = homeDir
	vm.Config.Files.SuspendDirectory = homeDir
	vm.Config.Files.LogDirectory = homeDir
	vm.Summary.Config.VmPathName = vm.Config.Files.VmPathName

	type file struct {
		name string
		size int64
		kind types.VirtualMachineFileLayoutExFileType
	}
	files := []file{
		{vm.Config.Files.VmPathName, vmxSize, types.VirtualMachineFileLayoutExFileTypeConfig},
		{fmt.Sprintf("%s/%s.nvram", homeDir, v.name), nvramSize, types.VirtualMachineFileLayoutExFileTypeNvram},
		{fmt.Sprintf("%s/%s.vmsd", homeDir, v.name), 0, types.VirtualMachineFileLayoutExFileTypeSnapshotList},
		{homeDir + "/vmware.log", logSize, types.VirtualMachineFileLayoutExFileTypeLog},
	}
	layoutEx := &types.VirtualMachineFileLayoutEx{Timestamp: now}
	layout := &types.VirtualMachineFileLayout{
		ConfigFile: []string{v.name + ".nvram", v.name + ".vmsd"},
		LogFile:    []string{"vmware.log"},
	}
	add := func(f file) int32 {
		key := int32(len(layoutEx.File))
		layoutEx.File = append(layoutEx.File, types.VirtualMachineFileLayoutExFileInfo{
			Key: key, Name: f.name, Type: string(f.kind), Size: f.size, UniqueSize: f.size, Accessible: types.NewBool(true),
		})
		return key
	}
	for _, f := range files {
		add(f)
	}
	usage := map[types.ManagedObjectReference]*types.VirtualMachineUsageOnDatastore{}
	order := []types.ManagedObjectReference{v.home.ref}
	usage[v.home.ref] = &types.VirtualMachineUsageOnDatastore{Datastore: v.home.ref, Committed: homeBytes}
	for _, d := range v.disks {
		desc := d.fileName(d.ds)
		extent := strings.TrimSuffix(desc, ".vmdk") + "-flat.vmdk"
		dk := add(file{desc, descriptorSize, types.VirtualMachineFileLayoutExFileTypeDiskDescriptor})
		ek := add(file{extent, d.capacityKB * 1024, types.VirtualMachineFileLayoutExFileTypeDiskExtent})
		layoutEx.Disk = append(layoutEx.Disk, types.VirtualMachineFileLayoutExDiskLayout{
			Key: d.key, Chain: []types.VirtualMachineFileLayoutExDiskUnit{{FileKey: []int32{dk, ek}}},
		})
		layout.Disk = append(layout.Disk, types.VirtualMachineFileLayoutDiskLayout{Key: d.key, DiskFile: []string{desc}})
		u, ok := usage[d.ds.ref]
		if !ok {
			u = &types.VirtualMachineUsageOnDatastore{Datastore: d.ds.ref}
			usage[d.ds.ref] = u
			order = append(order, d.ds.ref)
		}
		u.Committed += d.bytes()
		u.Unshared += d.bytes()
	}
	storage := &types.VirtualMachineStorageInfo{Timestamp: now}
	summary := &types.VirtualMachineStorageSummary{Timestamp: now}
	for _, ref := range order {
		storage.PerDatastoreUsage = append(storage.PerDatastoreUsage, *usage[ref])
		summary.Committed += usage[ref].Committed
		summary.Unshared += usage[ref].Unshared
	}
	vm.LayoutEx = layoutEx
	vm.Layout = layout
	vm.Storage = storage
	vm.Summary.Storage = summary
	vm.Datastore = order
}

// finishDatastores gives the datastores what a real vCenter shows: volume URLs, VMFS or NAS
// info, mount paths, capacity and free space from the scenario, SIOC state and capabilities.
func (l *Lab) finishDatastores(ctx *simulator.Context) {
	for _, d := range l.inv.stores {
		ds := ctx.Map.Get(d.ref).(*simulator.Datastore)
		now := l.clock.Now()
		base := types.DatastoreInfo{
			Name: d.name, Url: d.url, FreeSpace: d.free(), Timestamp: &now,
			MaxFileSize: 62 << 40, MaxVirtualDiskCapacity: 62 << 40, MaxMemoryFileSize: 62 << 40,
		}
		kind := d.sc.Type
		switch kind {
		case "NFS", "NFS41":
			base.ContainerId = d.uuid
			ds.Info = &types.NasDatastoreInfo{DatastoreInfo: base, Nas: &types.HostNasVolume{
				HostFileSystemVolume: types.HostFileSystemVolume{Type: kind, Name: d.name, Capacity: d.capacity},
				RemoteHost:           fmt.Sprintf("nas-%02d.lab.local", d.idx), RemotePath: "/export/" + d.name,
			}}
		case "VMFS":
			ds.Info = &types.VmfsDatastoreInfo{DatastoreInfo: base, Vmfs: &types.HostVmfsVolume{
				HostFileSystemVolume: types.HostFileSystemVolume{Type: "VMFS", Name: d.name, Capacity: d.capacity},
				BlockSizeMb:          1, MaxBlocks: 61 << 20, MajorVersion: 6, Version: "6.82", Uuid: d.uuid,
				Extent: []types.HostScsiDiskPartition{{DiskName: fmt.Sprintf("naa.6000c29%025x", d.idx+1), Partition: 1}},
				Ssd:    types.NewBool(d.sc.Device.Kind == scenario.KindSSD), Local: types.NewBool(false),
			}}
		default:
			ds.Info = &base
		}
		ds.Summary = types.DatastoreSummary{
			Datastore: &d.ref, Name: d.name, Url: d.url, Capacity: d.capacity, FreeSpace: d.free(),
			Accessible: d.accessible, MultipleHostAccess: types.NewBool(len(d.mounted) > 1), Type: kind,
			MaintenanceMode: string(d.maintenance),
		}
		for i := range ds.Host {
			ds.Host[i].MountInfo.Path = "/vmfs/volumes/" + d.uuid
			ds.Host[i].MountInfo.Accessible = types.NewBool(d.accessible)
			if !d.accessible {
				ds.Host[i].MountInfo.InaccessibleReason = "AllPathsDown_Start"
			}
		}
		capability := ds.Capability
		capability.StorageIORMSupported = kind != "vsan" && kind != "VVOL"
		ds.Capability = capability
		iorm := d.iorm
		ds.IormConfiguration = &iorm
		if !d.accessible {
			ds.OverallStatus = types.ManagedEntityStatusRed
		}
	}
	l.refreshPods(ctx)
}

func gib(gb float64) int64 { return int64(math.Round(gb * (1 << 30))) }

// stableUUID derives an RFC 4122-shaped UUID from a seed and names, so object identities survive a
// restart of the lab with the same scenario.
func stableUUID(seed int64, kind, name string) string {
	b := hashBytes(seed, kind, name)
	b[6] = (b[6] & 0x0f) | 0x50
	b[8] = (b[8] & 0x3f) | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// volumeUUID is a datastore's volume id in the form ESXi gives it: VMFS
// "5f1e8c2a-4b7d91e3-1a2b-0050569a1c2d", NFS "1a2b3c4d-5e6f7a8b", vSAN "vsan:...", vVol "vvol:...".
func volumeUUID(seed int64, d *scenario.Datastore) string {
	b := hashBytes(seed, "datastore", d.Name)
	switch d.Type {
	case "NFS", "NFS41":
		return fmt.Sprintf("%x-%x", b[0:4], b[4:8])
	case "vsan":
		return fmt.Sprintf("vsan:%x-%x", b[0:8], b[8:16])
	case "VVOL":
		return fmt.Sprintf("vvol:%x-%x", b[0:8], b[8:16])
	default:
		return fmt.Sprintf("%x-%x-%x-%x", b[0:4], b[4:8], b[8:10], b[10:16])
	}
}

func hashBytes(seed int64, kind, name string) []byte {
	h := sha1.New()
	var s [8]byte
	binary.BigEndian.PutUint64(s[:], uint64(seed))
	h.Write(s[:])
	h.Write([]byte(kind + "\x00" + name))
	return h.Sum(nil)
}

func groupThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// simNow is a convenience for code that needs the simulated time as a pointer.
func (l *Lab) simNow() *time.Time {
	t := l.clock.Now()
	return &t
}
