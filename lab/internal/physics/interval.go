package physics

import "time"

// DiskKey names a virtual disk: its VM and its controller:unit ("scsi0:1"), which is also the
// instance of vCenter's virtualDisk.* counters.
type DiskKey struct{ VM, Unit string }

// HostDatastore names the IO of one host to one datastore: the instance of vCenter's host-level
// datastore.* counters.
type HostDatastore struct{ Host, Datastore string }

// Interval is the outcome of one sampling interval.
type Interval struct {
	End            time.Time
	Duration       time.Duration
	Disks          map[DiskKey]DiskStats
	HostDatastores map[HostDatastore]HostDatastoreStats // pairs that are mounted or have IO
	Datastores     map[string]DatastoreStats
	TotalIOPS      float64 // ground truth, whole scenario
	AvgLatencyMs   float64 // ground truth, IOPS-weighted over all disks
}

// DiskStats holds a disk's figures: the model's truth and what vCenter would have sampled.
type DiskStats struct{ True, Measured DiskMetrics }

// DiskMetrics are the per-virtual-disk quantities behind vCenter's virtualDisk.* counters.
type DiskMetrics struct {
	ReadIOPS, WriteIOPS           float64
	ReadLatencyMs, WriteLatencyMs float64 // as the guest sees them: host queue, array, devices
	ReadOIO, WriteOIO             float64 // average outstanding reads / writes
	ReadIOSizeKB, WriteIOSizeKB   float64
	ReadKBps, WriteKBps           float64
	// Seek-distance histogram of the interval (counts of IOs), as vCenter's
	// virtualDisk.small/medium/largeSeeks: small < 64 LBNs, medium < 8192 LBNs, large beyond;
	// random% ≈ (medium+large)/total.
	SmallSeeks, MediumSeeks, LargeSeeks float64
}

// HostDatastoreStats holds a host-datastore pair's figures, true and sampled.
type HostDatastoreStats struct{ True, Measured HostDatastoreMetrics }

// HostDatastoreMetrics are the quantities behind vCenter's host-level datastore.* counters.
type HostDatastoreMetrics struct {
	ReadIOPS, WriteIOPS           float64
	ReadOIO, WriteOIO             float64
	ReadLatencyMs, WriteLatencyMs float64 // IOPS-weighted over the host's disks on the datastore
	ReadKBps, WriteKBps           float64
	MaxQueueDepth                 float64 // the host's device queue depth (SIOC adjusts it)
	SizeNormalizedLatencyUs       float64 // latency normalised to a 16 KB IO, as vCenter reports
}

// DatastoreStats is a datastore's ground truth for the interval (virtual disk IO; copies count in
// the device figures Utilization, DeviceLatencyMs and CopyMBps only).
type DatastoreStats struct {
	ReadIOPS, WriteIOPS, TotalOIO               float64
	ReadLatencyMs, WriteLatencyMs, AvgLatencyMs float64 // as the VMs see them, IOPS-weighted
	Utilization                                 float64 // busy fraction of the devices
	Congested                                   bool    // SIOC enabled and latency above its threshold

	// DeviceLatencyMs is the array-side latency (no host queueing), IOPS-weighted: what SIOC
	// compares with its congestion threshold.
	DeviceLatencyMs float64
	// ThresholdMs is the congestion threshold in effect (manual, or computed from peak throughput
	// in automatic mode); zero when SIOC is off.
	ThresholdMs float64
	// CacheDirtyMB is the write backlog in the array cache at the end of the interval; CacheFull
	// says writes spent part of the interval waiting for the devices.
	CacheDirtyMB float64
	CacheFull    bool
	// CopyMBps is the Storage vMotion traffic (read or written) on the datastore.
	CopyMBps float64
}
