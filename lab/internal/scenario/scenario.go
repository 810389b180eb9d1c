// Package scenario describes a lab datacenter: hosts, datastores with their storage devices, virtual
// machines with their disks and IO workloads. It is the one input of the lab; the physics and the
// vSphere inventory are both built from it.
package scenario

import (
	"fmt"
	"time"
)

// Scenario is a whole datacenter as written in a scenario YAML file.
type Scenario struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	// Seed makes noise, bursts and ranged workloads repeatable.
	Seed       int64       `yaml:"seed,omitempty"`
	Datacenter string      `yaml:"datacenter,omitempty"`
	Clusters   []Cluster   `yaml:"clusters,omitempty"`
	Hosts      []Host      `yaml:"hosts,omitempty"`
	Datastores []Datastore `yaml:"datastores,omitempty"`
	VMs        []VM        `yaml:"vms,omitempty"`
	// Settings are vCenter-wide knobs the lab exposes as a real vCenter would.
	Settings Settings `yaml:"settings,omitempty"`

	pos `yaml:"-"`
}

// Settings mirror vCenter advanced settings and lab-wide measurement knobs.
type Settings struct {
	// MaxQueryMetrics is config.vpxd.stats.maxQueryMetrics: the most metrics one QueryPerf may ask
	// for; 0 means the vCenter default (256), a negative value means no limit.
	MaxQueryMetrics int `yaml:"max_query_metrics,omitempty"`
	// NoisePct is the relative standard deviation of measurement noise on sampled counters.
	NoisePct *float64 `yaml:"noise_pct,omitempty"`
	// LUNQueueDepth is each host's device queue depth per datastore (ESXi's DQLEN); outstanding IOs
	// beyond it wait in the host's queue. 0 means the ESXi default, 32.
	LUNQueueDepth int `yaml:"lun_queue_depth,omitempty"`

	pos `yaml:"-"`
}

// Tag is a vSphere tag, written "category/name" (the category is created with cardinality
// multiple and made applicable to every object type).
type Tag struct {
	Category string
	Name     string

	pos `yaml:"-"`
}

// Cluster is a compute cluster; its hosts are listed here or name it in Host.Cluster.
type Cluster struct {
	Name  string   `yaml:"name"`
	Hosts []string `yaml:"hosts,omitempty"`

	pos `yaml:"-"`
}

// Host is an ESXi host.
type Host struct {
	Name    string `yaml:"name"`
	Cluster string `yaml:"cluster,omitempty"`

	pos `yaml:"-"`
}

// Datastore is a LUN or NFS export seen by some hosts, backed by a storage device.
type Datastore struct {
	Name       string  `yaml:"name"`
	CapacityGB float64 `yaml:"capacity_gb"`
	// UsedGB is space taken by files the scenario does not model (ISOs, other VMs' files).
	UsedGB float64 `yaml:"used_gb,omitempty"`
	// Type is VMFS (default) or NFS.
	Type string `yaml:"type,omitempty"`
	// Hosts that mount the datastore; empty means every host of the scenario.
	Hosts []string `yaml:"hosts,omitempty"`
	// Pod names the datastore cluster (StoragePod) the datastore belongs to, if any.
	Pod         string `yaml:"pod,omitempty"`
	Maintenance bool   `yaml:"maintenance,omitempty"`
	// Inaccessible starts the datastore as not accessible (summary.accessible = false).
	Inaccessible bool   `yaml:"inaccessible,omitempty"`
	Device       Device `yaml:"device,omitempty"`
	SIOC         SIOC   `yaml:"sioc,omitempty"`
	// Tags attached to the datastore in vCenter's tagging service.
	Tags []Tag `yaml:"tags,omitempty"`

	pos `yaml:"-"`
}

// Device kinds with built-in service parameters.
const (
	KindSSD    = "ssd"
	KindFC15k  = "fc15k"
	KindSAS10k = "sas10k"
	KindSATA7k = "sata7k"
	KindCustom = "custom"
)

// Device is the storage behind a datastore: a RAID group of spindles or flash devices, an array cache.
type Device struct {
	Kind  string `yaml:"kind"`
	Disks int    `yaml:"disks,omitempty"`
	// RAID level: "0", "1", "5", "6" or "10".
	RAID    string  `yaml:"raid,omitempty"`
	CacheMB float64 `yaml:"cache_mb,omitempty"`
	// Service overrides the kind's built-in per-device service parameters (required for custom).
	Service *ServiceParams `yaml:"service,omitempty"`

	pos `yaml:"-"`
}

// ServiceParams are per-physical-device service characteristics; zero fields take the kind's default.
type ServiceParams struct {
	// AvgSeekMs is the average seek time of a random access on a spindle.
	AvgSeekMs float64 `yaml:"avg_seek_ms,omitempty"`
	// RPM sets rotational latency (half a revolution on average); 0 for flash.
	RPM float64 `yaml:"rpm,omitempty"`
	// TransferMBps is the media transfer rate of one device.
	TransferMBps float64 `yaml:"transfer_mb_s,omitempty"`
	// ReadUs and WriteUs are flash access times; used when RPM is 0.
	ReadUs  float64 `yaml:"read_us,omitempty"`
	WriteUs float64 `yaml:"write_us,omitempty"`
	// DestageMBps is how fast the array cache drains writes to the devices.
	DestageMBps float64 `yaml:"destage_mb_s,omitempty"`
	// ControllerUs is fixed per-IO array overhead (fabric, controller).
	ControllerUs float64 `yaml:"controller_us,omitempty"`
	// Channels is how many IOs one flash device serves in parallel (default 4; spindles serve one).
	Channels int `yaml:"channels,omitempty"`
	// StripeKB is the RAID stripe unit: IOs larger than it touch several devices (default 64).
	StripeKB float64 `yaml:"stripe_kb,omitempty"`

	pos `yaml:"-"`
}

// SIOC is Storage I/O Control's state on a datastore.
type SIOC struct {
	Enabled bool `yaml:"enabled,omitempty"`
	// ThresholdMode is "manual" (ThresholdMs applies) or "automatic" (a percentage of peak throughput).
	ThresholdMode string  `yaml:"threshold_mode,omitempty"`
	ThresholdMs   float64 `yaml:"threshold_ms,omitempty"`
	PeakPct       float64 `yaml:"peak_pct,omitempty"`

	pos `yaml:"-"`
}

// VM is a virtual machine with its virtual disks.
type VM struct {
	Name string `yaml:"name"`
	Host string `yaml:"host"`
	// PoweredOn defaults to true.
	PoweredOn *bool  `yaml:"powered_on,omitempty"`
	Disks     []Disk `yaml:"disks,omitempty"`
	// Tags attached to the VM in vCenter's tagging service.
	Tags []Tag `yaml:"tags,omitempty"`

	pos `yaml:"-"`
}

// IsPoweredOn reports the VM's initial power state (on unless the scenario says otherwise).
func (v VM) IsPoweredOn() bool { return v.PoweredOn == nil || *v.PoweredOn }

// Disk is one virtual disk: where it lives and what IO it does.
type Disk struct {
	// Unit is the controller and unit, "scsi0:1": the vCenter performance instance id.
	Unit      string    `yaml:"unit"`
	SizeGB    float64   `yaml:"size_gb"`
	Datastore string    `yaml:"datastore"`
	Thin      bool      `yaml:"thin,omitempty"`
	Workload  *Workload `yaml:"workload,omitempty"`
	IO        IOAlloc   `yaml:"io,omitempty"`

	pos `yaml:"-"`
}

// Controller returns "scsi0" of "scsi0:1", Number the unit number 1.
func (d Disk) Controller() (bus string, unit int) {
	var ctrl string
	var n int
	for i := len(d.Unit) - 1; i >= 0; i-- {
		if d.Unit[i] == ':' {
			ctrl = d.Unit[:i]
			fmt.Sscanf(d.Unit[i+1:], "%d", &n)
			break
		}
	}
	return ctrl, n
}

// IOAlloc is a disk's storageIOAllocation: reservation and limit in IOPS, shares.
type IOAlloc struct {
	Reservation int64 `yaml:"reservation,omitempty"`
	// Limit in IOPS; nil or -1 means unlimited.
	Limit  *int64 `yaml:"limit,omitempty"`
	Shares Shares `yaml:"shares,omitempty"`

	pos `yaml:"-"`
}

// LimitIOPS returns the limit, -1 for unlimited.
func (a IOAlloc) LimitIOPS() int64 {
	if a.Limit == nil {
		return -1
	}
	return *a.Limit
}

// Workload is an Iometer-like closed-loop IO generator on one disk.
type Workload struct {
	OIO       OIO     `yaml:"oio"`
	IOSizeKB  float64 `yaml:"io_size_kb"`
	ReadPct   float64 `yaml:"read_pct"`
	RandomPct float64 `yaml:"random_pct"`
	// Phases, when given, replace the base parameters in turn; each phase may override any of them.
	Phases []Phase `yaml:"phases,omitempty"`
	// Burst modulates the outstanding IOs over time (on/off or diurnal).
	Burst *Burst `yaml:"burst,omitempty"`

	pos `yaml:"-"`
}

// Phase is a stretch of time with its own workload parameters; unset fields keep the base ones.
type Phase struct {
	Duration  Duration `yaml:"duration"`
	OIO       *OIO     `yaml:"oio,omitempty"`
	IOSizeKB  *float64 `yaml:"io_size_kb,omitempty"`
	ReadPct   *float64 `yaml:"read_pct,omitempty"`
	RandomPct *float64 `yaml:"random_pct,omitempty"`

	pos `yaml:"-"`
}

// Burst kinds.
const (
	BurstOnOff   = "onoff"
	BurstDiurnal = "diurnal"
)

// Burst modulates a workload's outstanding IOs: on/off periods, or a daily sine between a floor and 1.
type Burst struct {
	Kind string `yaml:"kind"`
	// On and Off are the lengths of the active and idle periods (onoff).
	On  Duration `yaml:"on,omitempty"`
	Off Duration `yaml:"off,omitempty"`
	// Period (default 24h), PeakAt (offset of the peak within the period) and MinFactor (the
	// trough as a fraction of the peak) shape the diurnal curve.
	Period    Duration `yaml:"period,omitempty"`
	PeakAt    Duration `yaml:"peak_at,omitempty"`
	MinFactor float64  `yaml:"min_factor,omitempty"`

	pos `yaml:"-"`
}

// OIO is the number of outstanding IOs a workload keeps in flight: fixed, ranged (a new value
// uniformly drawn in [Min, Max] every Every, default 20 s) or scheduled (piecewise constant).
type OIO struct {
	Fixed    float64
	Min, Max float64
	Every    Duration
	Schedule []ScheduleStep
	// Repeat restarts the schedule after this long; zero keeps the last value.
	Repeat Duration

	pos `yaml:"-"`
}

// ScheduleStep sets the outstanding IOs from At (since the scenario's start) on.
type ScheduleStep struct {
	At    Duration `yaml:"at"`
	Value float64  `yaml:"value"`

	pos `yaml:"-"`
}

// Kind tells which form the OIO was written in.
func (o OIO) Kind() string {
	switch {
	case len(o.Schedule) > 0:
		return "schedule"
	case o.Max > 0:
		return "range"
	default:
		return "fixed"
	}
}

// Shares is "low" (500), "normal" (1000), "high" (2000) or a custom number.
type Shares struct {
	Level string
	Value int32

	pos `yaml:"-"`
}

// Share values of the vSphere levels for virtual disk IO.
const (
	SharesLow    = 500
	SharesNormal = 1000
	SharesHigh   = 2000
)

// Resolve returns the level name and the number of shares ("normal", 1000 when unset).
func (s Shares) Resolve() (string, int32) {
	switch s.Level {
	case "", "normal":
		return "normal", SharesNormal
	case "low":
		return "low", SharesLow
	case "high":
		return "high", SharesHigh
	default:
		return "custom", s.Value
	}
}

// Duration is a time span written as "90s", "10m", "1h30m" or a number of seconds.
type Duration struct{ time.Duration }

// pos remembers where a node started and where each of its keys was, for error messages.
type pos struct {
	line  int
	lines map[string]int
}

// Line returns the line of the mapping, or of key when given and known.
func (p pos) Line(key ...string) int {
	if len(key) > 0 && p.lines != nil {
		if l, ok := p.lines[key[0]]; ok {
			return l
		}
	}
	return p.line
}
