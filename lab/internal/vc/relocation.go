package vc

import (
	"fmt"
	"sort"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// Storage vMotion concurrency limits of vSphere: 8 per datastore (source or target) and 2 per
// host. Further relocations wait in the queue.
const (
	maxRelocationsPerDatastore = 8
	maxRelocationsPerHost      = 2
)

// relocation is one RelocateVM_Task: a copy of each moving disk (and of the VM's files when its
// home moves), one after the other, then the switch-over of every backing at once, as Storage
// vMotion mirrors the disks and switches when the copy is done.
type relocation struct {
	task *labTask
	vm   *vmInfo

	moves    []diskMove
	fromHome *dsInfo // the home before, when it moves
	home     *dsInfo // new home, nil when unchanged
	fromHost *hostInfo
	host     *hostInfo // new host, nil when unchanged
	pool     *types.ManagedObjectReference

	segments []segment
	total    int64
	need     map[*dsInfo]int64 // space taken on each target
	stores   []*dsInfo         // datastores it occupies a slot on
	hosts    []*hostInfo       // hosts it occupies a slot on

	running  bool
	seg      int
	segStart time.Time
	copied   int64 // bytes of the finished segments
	copyID   string
	pct      int32
}

type diskMove struct {
	disk     *diskInfo
	from, to *dsInfo
}

type segment struct {
	from, to *dsInfo
	bytes    int64
}

// relocator queues and runs relocations. Its state is guarded by Lab.mu.
type relocator struct {
	lab      *Lab
	queue    []*relocation
	running  []*relocation
	perStore map[*dsInfo]int
	perHost  map[*hostInfo]int
}

func newRelocator(l *Lab) *relocator {
	return &relocator{lab: l, perStore: map[*dsInfo]int{}, perHost: map[*hostInfo]int{}}
}

// relocationPlan is a validated RelocateVM_Task spec, resolved against the inventory.
type relocationPlan struct {
	targets map[*diskInfo]*dsInfo
	home    *dsInfo
	host    *hostInfo
	pool    *types.ManagedObjectReference
}

// planRelocation resolves a spec: every disk locator names a disk of the VM and an existing
// datastore; spec.datastore moves the VM's files and every disk no locator names. Structural
// problems are call faults (vCenter refuses such a spec before creating a task).
func (l *Lab) planRelocation(ctx *simulator.Context, v *vmInfo, spec *types.VirtualMachineRelocateSpec) (*relocationPlan, *taskError) {
	inv := l.inv
	store := func(ref types.ManagedObjectReference, field string) (*dsInfo, *taskError) {
		if ref.Type != "Datastore" {
			return nil, faultf(&types.InvalidArgument{InvalidProperty: field}, "A specified parameter was not correct: %s", field)
		}
		d, ok := inv.storeByRef[ref.Value]
		if !ok {
			return nil, faultf(&types.ManagedObjectNotFound{Obj: ref},
				"The object 'vim.Datastore:%s' has already been deleted or has not been completely created", ref.Value)
		}
		return d, nil
	}
	p := &relocationPlan{targets: map[*diskInfo]*dsInfo{}}
	if spec.Datastore != nil {
		d, err := store(*spec.Datastore, "spec.datastore")
		if err != nil {
			return nil, err
		}
		p.home = d
		for _, disk := range v.disks {
			p.targets[disk] = d
		}
	}
	seen := map[int32]bool{}
	for i, loc := range spec.Disk {
		field := fmt.Sprintf("spec.disk[%d]", i)
		var disk *diskInfo
		for _, d := range v.disks {
			if d.key == loc.DiskId {
				disk = d
			}
		}
		if disk == nil {
			return nil, faultf(&types.InvalidArgument{InvalidProperty: field + ".diskId"},
				"A specified parameter was not correct: %s.diskId (VM %q has no disk %d)", field, v.name, loc.DiskId)
		}
		if seen[loc.DiskId] {
			return nil, faultf(&types.InvalidArgument{InvalidProperty: field + ".diskId"},
				"A specified parameter was not correct: %s.diskId (disk %d is listed twice)", field, loc.DiskId)
		}
		seen[loc.DiskId] = true
		d, err := store(loc.Datastore, field+".datastore")
		if err != nil {
			return nil, err
		}
		p.targets[disk] = d
	}
	if spec.Host != nil {
		h, ok := inv.hostByRef[spec.Host.Value]
		if spec.Host.Type != "HostSystem" || !ok {
			return nil, faultf(&types.ManagedObjectNotFound{Obj: *spec.Host},
				"The object 'vim.HostSystem:%s' has already been deleted or has not been completely created", spec.Host.Value)
		}
		p.host = h
	}
	if spec.Pool != nil {
		if _, ok := ctx.Map.Get(*spec.Pool).(*simulator.ResourcePool); !ok {
			return nil, faultf(&types.ManagedObjectNotFound{Obj: *spec.Pool},
				"The object 'vim.ResourcePool:%s' has already been deleted or has not been completely created", spec.Pool.Value)
		}
		p.pool = spec.Pool
	}
	return p, nil
}

// submit turns a plan into a queued relocation, checking what vCenter checks before it accepts a
// Storage vMotion (target accessible, not in maintenance, mounted on the VM's host, with space).
// It returns the relocation, or the fault its task fails with. Called with l.mu held.
func (r *relocator) submit(task *labTask, v *vmInfo, p *relocationPlan) (*relocation, *taskError) {
	if v.busy != nil {
		return nil, faultf(&types.TaskInProgress{Task: v.busy.task.ref()}, "Another task is already in progress.")
	}
	rel := &relocation{task: task, vm: v, need: map[*dsInfo]int64{}}
	host := v.host
	if p.host != nil && p.host != v.host {
		rel.fromHost, rel.host, host = v.host, p.host, p.host
	}
	rel.pool = p.pool
	finalHome := v.home
	if p.home != nil && p.home != v.home {
		rel.fromHome, rel.home, finalHome = v.home, p.home, p.home
	}
	disks := make([]*diskInfo, 0, len(p.targets))
	for d := range p.targets {
		disks = append(disks, d)
	}
	sort.Slice(disks, func(i, j int) bool { return disks[i].idx < disks[j].idx })
	for _, d := range disks {
		if to := p.targets[d]; to != d.ds {
			rel.moves = append(rel.moves, diskMove{disk: d, from: d.ds, to: to})
			rel.segments = append(rel.segments, segment{from: d.ds, to: to, bytes: d.bytes()})
			rel.need[to] += d.bytes()
		}
	}
	if rel.home != nil {
		rel.segments = append(rel.segments, segment{from: rel.fromHome, to: rel.home, bytes: homeBytes})
		rel.need[rel.home] += homeBytes
	}
	// Every datastore the VM ends on must be usable from its (new) host.
	final := map[*dsInfo]bool{finalHome: true}
	for _, d := range v.disks {
		to := d.ds
		if t, ok := p.targets[d]; ok {
			to = t
		}
		final[to] = true
	}
	for to := range rel.need {
		if err := checkTarget(to, host); err != nil {
			return nil, err
		}
	}
	for d := range final {
		if !d.mounted[host] {
			return nil, notMounted(d, host)
		}
	}
	for to, bytes := range rel.need {
		if to.free() < bytes {
			return nil, noSpace(to, rel, to)
		}
	}
	seen := map[*dsInfo]bool{}
	for _, s := range rel.segments {
		for _, d := range []*dsInfo{s.from, s.to} {
			if !seen[d] {
				seen[d] = true
				rel.stores = append(rel.stores, d)
			}
		}
	}
	rel.hosts = []*hostInfo{v.host}
	if rel.host != nil {
		rel.hosts = append(rel.hosts, rel.host)
	}
	for _, s := range rel.segments {
		rel.total += s.bytes
	}
	v.busy = rel
	r.queue = append(r.queue, rel)
	return rel, nil
}

func checkTarget(d *dsInfo, host *hostInfo) *taskError {
	if !d.accessible {
		return faultf(&types.InaccessibleDatastore{InvalidDatastore: types.InvalidDatastore{Datastore: &d.ref, Name: d.name}, Detail: "AllPathsDown"},
			"The datastore '%s' is not accessible.", d.name)
	}
	if d.maintenance != types.DatastoreSummaryMaintenanceModeStateNormal {
		return faultf(&types.InvalidDatastoreState{DatastoreName: d.name},
			"The datastore '%s' is in maintenance mode (%s): it cannot receive virtual machine files.", d.name, d.maintenance)
	}
	if !d.mounted[host] {
		return notMounted(d, host)
	}
	return nil
}

func notMounted(d *dsInfo, host *hostInfo) *taskError {
	return faultf(&types.DatastoreNotWritableOnHost{InvalidDatastore: types.InvalidDatastore{Datastore: &d.ref, Name: d.name}, Host: host.ref},
		"The datastore '%s' is not mounted on host '%s'.", d.name, host.name)
}

func noSpace(d *dsInfo, rel *relocation, to *dsInfo) *taskError {
	file := fmt.Sprintf("[%s] %s", d.name, rel.vm.name)
	for _, m := range rel.moves {
		if m.to == to {
			file = m.disk.fileName(to)
			break
		}
	}
	return faultf(&types.NoDiskSpace{FileFault: types.FileFault{File: file}, Datastore: d.name},
		"Insufficient disk space on datastore '%s'.", d.name)
}

// startable reports whether a relocation's datastores and hosts have a free slot.
func (r *relocator) startable(rel *relocation) bool {
	for _, d := range rel.stores {
		if r.perStore[d] >= maxRelocationsPerDatastore {
			return false
		}
	}
	for _, h := range rel.hosts {
		if r.perHost[h] >= maxRelocationsPerHost {
			return false
		}
	}
	return true
}

// effects are what the relocator decided under Lab.mu and the lab carries out after releasing it:
// task updates and simulator object changes take object locks.
type effects struct {
	started   []*relocation
	failed    []failure
	completed []*relocation
	progress  []progressNote
	aborted   []*relocation
}

type failure struct {
	rel *relocation
	err *taskError
}

type progressNote struct {
	task *labTask
	pct  int32
}

// startQueued starts, in queue order, every queued relocation that has free slots; a relocation
// whose space has gone meanwhile fails. Called with l.mu held.
func (r *relocator) startQueued(now time.Time, cancelled map[*labTask]bool, fx *effects) {
	kept := r.queue[:0]
	for _, rel := range r.queue {
		if cancelled[rel.task] {
			rel.vm.busy = nil
			fx.aborted = append(fx.aborted, rel)
			continue
		}
		if !r.startable(rel) {
			kept = append(kept, rel)
			continue
		}
		var err *taskError
		for to, bytes := range rel.need {
			if e := checkTarget(to, targetHost(rel)); e != nil {
				err = e
				break
			}
			if to.free() < bytes {
				err = noSpace(to, rel, to)
				break
			}
		}
		if err != nil {
			rel.vm.busy = nil
			fx.failed = append(fx.failed, failure{rel, err})
			continue
		}
		for to, bytes := range rel.need {
			to.reserved += bytes
		}
		for _, d := range rel.stores {
			r.perStore[d]++
		}
		for _, h := range rel.hosts {
			r.perHost[h]++
		}
		rel.running = true
		rel.segStart = now
		r.running = append(r.running, rel)
		r.startSegment(rel)
		fx.started = append(fx.started, rel)
	}
	r.queue = kept
}

func targetHost(rel *relocation) *hostInfo {
	if rel.host != nil {
		return rel.host
	}
	return rel.vm.host
}

// startSegment puts the current segment's copy load on the physics. Called with l.mu held.
func (r *relocator) startSegment(rel *relocation) {
	if rel.seg >= len(rel.segments) {
		return
	}
	s := rel.segments[rel.seg]
	rel.copyID = fmt.Sprintf("%s/%d", rel.task.ref().Value, rel.seg)
	_ = r.lab.physics.StartCopy(rel.copyID, s.from.name, s.to.name, r.lab.opts.CopyMBps)
}

func (r *relocator) stopSegment(rel *relocation) {
	if rel.copyID != "" {
		r.lab.physics.StopCopy(rel.copyID)
		rel.copyID = ""
	}
}

// segmentEnd is when the running segment's copy is done, at the lab's copy rate.
func (r *relocator) segmentEnd(rel *relocation) time.Time {
	if rel.seg >= len(rel.segments) {
		return rel.segStart
	}
	secs := float64(rel.segments[rel.seg].bytes) / (r.lab.opts.CopyMBps * (1 << 20))
	if secs < 1 {
		secs = 1
	}
	return rel.segStart.Add(time.Duration(secs * float64(time.Second)))
}

// nextEvent is the earliest segment end among running relocations. Called with l.mu held.
func (r *relocator) nextEvent() (time.Time, bool) {
	var next time.Time
	for _, rel := range r.running {
		if t := r.segmentEnd(rel); next.IsZero() || t.Before(next) {
			next = t
		}
	}
	return next, !next.IsZero()
}

// fire moves every running relocation whose segment ends by t to its next segment or to its
// completion, then starts queued relocations that fit. Called with l.mu held.
func (r *relocator) fire(t time.Time, cancelled map[*labTask]bool, fx *effects) {
	kept := r.running[:0]
	for _, rel := range r.running {
		if cancelled[rel.task] {
			r.release(rel)
			fx.aborted = append(fx.aborted, rel)
			continue
		}
		end := r.segmentEnd(rel)
		for !end.After(t) && rel.seg < len(rel.segments) {
			r.stopSegment(rel)
			rel.copied += rel.segments[rel.seg].bytes
			rel.seg++
			rel.segStart = end
			r.startSegment(rel)
			end = r.segmentEnd(rel)
		}
		if rel.seg >= len(rel.segments) {
			r.complete(rel)
			fx.completed = append(fx.completed, rel)
			continue
		}
		kept = append(kept, rel)
	}
	r.running = kept
	r.startQueued(t, cancelled, fx)
}

// dropCancelled stops the running relocations whose task a client cancelled. Called with l.mu held.
func (r *relocator) dropCancelled(cancelled map[*labTask]bool, fx *effects) {
	if len(cancelled) == 0 {
		return
	}
	kept := r.running[:0]
	for _, rel := range r.running {
		if cancelled[rel.task] {
			r.release(rel)
			fx.aborted = append(fx.aborted, rel)
			continue
		}
		kept = append(kept, rel)
	}
	r.running = kept
}

// release frees a relocation's slots, reservations and copy load without moving anything.
func (r *relocator) release(rel *relocation) {
	r.stopSegment(rel)
	if rel.running {
		for to, bytes := range rel.need {
			to.reserved -= bytes
		}
		for _, d := range rel.stores {
			r.perStore[d]--
		}
		for _, h := range rel.hosts {
			r.perHost[h]--
		}
	}
	rel.running = false
	rel.vm.busy = nil
}

// complete switches the disks over in the lab's bookkeeping and the physics.
func (r *relocator) complete(rel *relocation) {
	r.release(rel)
	v := rel.vm
	before := vmFootprint(v)
	for _, m := range rel.moves {
		m.disk.ds = m.to
		_ = r.lab.physics.MoveDisk(m.disk.physicsKey(), m.to.name)
	}
	if rel.home != nil {
		v.home = rel.home
	}
	if rel.host != nil {
		v.host = rel.host
		_ = r.lab.physics.SetVMHost(v.name, rel.host.name)
	}
	after := vmFootprint(v)
	for d, b := range before {
		d.files -= b
	}
	for d, b := range after {
		d.files += b
	}
}

// progress notes the percentage copied of each running relocation that changed. Called with
// l.mu held.
func (r *relocator) progress(t time.Time, fx *effects) {
	for _, rel := range r.running {
		done := rel.copied
		if rel.seg < len(rel.segments) {
			s := rel.segments[rel.seg]
			el := t.Sub(rel.segStart).Seconds() * r.lab.opts.CopyMBps * (1 << 20)
			if el > float64(s.bytes) {
				el = float64(s.bytes)
			}
			if el > 0 {
				done += int64(el)
			}
		}
		pct := int32(99)
		if rel.total > 0 {
			pct = int32(float64(done) / float64(rel.total) * 100)
		}
		if pct > 99 {
			pct = 99
		}
		if pct != rel.pct {
			rel.pct = pct
			fx.progress = append(fx.progress, progressNote{rel.task, pct})
		}
	}
}

func (r *relocator) active() bool { return len(r.running) > 0 }

// tasks lists the relocations' tasks (to check for cancellation outside Lab.mu).
func (r *relocator) tasks() []*labTask {
	out := make([]*labTask, 0, len(r.queue)+len(r.running))
	for _, rel := range r.queue {
		out = append(out, rel.task)
	}
	for _, rel := range r.running {
		out = append(out, rel.task)
	}
	return out
}

// abortAll fails every queued and running relocation (the lab is closing).
func (r *relocator) abortAll() {
	l := r.lab
	l.mu.Lock()
	var all []*relocation
	all = append(all, r.queue...)
	all = append(all, r.running...)
	for _, rel := range all {
		r.release(rel)
	}
	r.queue, r.running = nil, nil
	l.mu.Unlock()
	for _, rel := range all {
		rel.task.fail(&types.RequestCanceled{}, "The task was canceled: the lab is shutting down.")
	}
}

// carryOut applies decided effects: task states, and for completed relocations the simulator
// objects (backings, layout, datastores' VM lists and free space, hosts' VM lists).
func (l *Lab) carryOut(fx *effects) {
	ctx := l.newContext()
	for _, rel := range fx.started {
		rel.task.running()
	}
	for _, f := range fx.failed {
		f.rel.task.fail(f.err.fault, f.err.msg)
	}
	touched := map[*dsInfo]bool{}
	for _, rel := range fx.started {
		for d := range rel.need {
			touched[d] = true
		}
	}
	for _, rel := range fx.completed {
		l.applyRelocation(ctx, rel)
		for _, d := range rel.stores {
			touched[d] = true
		}
	}
	for _, rel := range fx.aborted {
		for d := range rel.need {
			touched[d] = true
		}
	}
	if len(touched) > 0 {
		list := make([]*dsInfo, 0, len(touched))
		for d := range touched {
			list = append(list, d)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].idx < list[j].idx })
		l.publishStores(ctx, list)
		l.refreshPods(ctx)
	}
	for _, p := range fx.progress {
		p.task.progress(p.pct)
	}
	for _, rel := range fx.completed {
		rel.task.succeed(nil)
	}
	l.checkMaintenance(ctx)
}

// applyRelocation updates the simulator objects after a relocation completed in the bookkeeping.
func (l *Lab) applyRelocation(ctx *simulator.Context, rel *relocation) {
	v := rel.vm
	vm := ctx.Map.Get(v.ref).(*simulator.VirtualMachine)
	var oldStores, newStores []types.ManagedObjectReference
	var oldPool *types.ManagedObjectReference
	mutate(ctx, vm, vmPlacementRoots, func() {
		defer func() { newStores = append(newStores, vm.Datastore...) }()
		oldStores = append(oldStores, vm.Datastore...)
		oldPool = vm.ResourcePool
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, m := range rel.moves {
			for _, dev := range vm.Config.Hardware.Device {
				if disk, ok := dev.(*types.VirtualDisk); ok && disk.Key == m.disk.key {
					if b, ok := disk.Backing.(*types.VirtualDiskFlatVer2BackingInfo); ok {
						b.FileName = m.disk.fileName(m.to)
						ref := m.to.ref
						b.Datastore = &ref
					}
				}
			}
		}
		if rel.host != nil {
			h := rel.host.ref
			vm.Runtime.Host = &h
			vm.Summary.Runtime.Host = &h
		}
		if rel.pool != nil {
			p := *rel.pool
			vm.ResourcePool = &p
		}
		l.applyLayout(ctx, vm, v)
	})
	has := func(list []types.ManagedObjectReference, ref types.ManagedObjectReference) bool {
		for _, r := range list {
			if r == ref {
				return true
			}
		}
		return false
	}
	for _, ref := range oldStores {
		if !has(newStores, ref) {
			ds := ctx.Map.Get(ref).(*simulator.Datastore)
			mutate(ctx, ds, []string{"vm"}, func() { ds.Vm = removeRef(ds.Vm, v.ref) })
		}
	}
	for _, ref := range newStores {
		if !has(oldStores, ref) {
			ds := ctx.Map.Get(ref).(*simulator.Datastore)
			mutate(ctx, ds, []string{"vm"}, func() { ds.Vm = append(ds.Vm, v.ref) })
		}
	}
	if rel.host != nil {
		from := ctx.Map.Get(rel.fromHost.ref).(*simulator.HostSystem)
		mutate(ctx, from, []string{"vm"}, func() { from.Vm = removeRef(from.Vm, v.ref) })
		to := ctx.Map.Get(rel.host.ref).(*simulator.HostSystem)
		mutate(ctx, to, []string{"vm"}, func() { to.Vm = append(to.Vm, v.ref) })
	}
	if rel.pool != nil && oldPool != nil && *oldPool != *rel.pool {
		if rp, ok := ctx.Map.Get(*oldPool).(*simulator.ResourcePool); ok {
			mutate(ctx, rp, []string{"vm"}, func() { rp.Vm = removeRef(rp.Vm, v.ref) })
		}
		if rp, ok := ctx.Map.Get(*rel.pool).(*simulator.ResourcePool); ok {
			mutate(ctx, rp, []string{"vm"}, func() { rp.Vm = append(rp.Vm, v.ref) })
		}
	}
}

// vmPlacementRoots are the VM properties a relocation changes.
var vmPlacementRoots = []string{
	"config.hardware.device", "config.files", "datastore", "layout", "layoutEx", "storage",
	"summary.storage", "summary.config.vmPathName", "runtime.host", "summary.runtime.host", "resourcePool",
}

func removeRef(list []types.ManagedObjectReference, ref types.ManagedObjectReference) []types.ManagedObjectReference {
	out := list[:0]
	for _, r := range list {
		if r != ref {
			out = append(out, r)
		}
	}
	return out
}
