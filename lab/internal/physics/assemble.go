package physics

import (
	"time"
)

// Seek-distance buckets of vCenter's virtualDisk seek counters, in logical blocks (512 bytes).
const (
	smallSeekLBN  = 64
	mediumSeekLBN = 8192
)

// normalizedSizeKB is the IO size vCenter normalises datastore latency to.
const normalizedSizeKB = 16

// Indices of the measured metrics in the noise hash.
const (
	mReadIOPS uint64 = iota
	mWriteIOPS
	mReadLat
	mWriteLat
	mReadOIO
	mWriteOIO
	mReadSize
	mWriteSize
	mSmall
	mMedium
	mLarge
)

// noiseEpoch anchors the measurement noise in time. An interval's noise is drawn from its end's
// offset from the scenario's start (the start aligned down to the interval), placed after this
// epoch: a scenario stepped the same way measures the same figures whatever the wall clock said
// when it started, so a lab run at speed 0 is repeatable from one process to the next. The
// evaluation and the physics report start at this epoch, so their draws are the ones they had
// when the noise hashed absolute times.
var noiseEpoch = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

// noiseWhen is the time an interval ending at end hashes into its measurement noise.
func noiseWhen(end, start time.Time, dt time.Duration) uint64 {
	return uint64(noiseEpoch.Add(end.Sub(start.Truncate(dt))).UnixNano())
}

// assemble turns the datastores' solutions into the interval's figures, truth and measured.
func (m *Model) assemble(end time.Time, dt time.Duration, results []storeResult) *Interval {
	iv := &Interval{
		End: end, Duration: dt,
		Disks:          make(map[DiskKey]DiskStats, len(m.disks)),
		HostDatastores: map[HostDatastore]HostDatastoreStats{},
		Datastores:     make(map[string]DatastoreStats, len(m.stores)),
	}
	when := noiseWhen(end, m.start, dt)
	secs := dt.Seconds()
	for _, d := range m.disks {
		iv.Disks[d.key] = DiskStats{}
	}
	latSum := 0.0
	for _, r := range results {
		st := DatastoreStats{
			Utilization: r.util, DeviceLatencyMs: r.deviceLat, Congested: r.congested, ThresholdMs: r.threshold,
			CacheDirtyMB: r.ds.dirtyMB, CacheFull: r.cacheFull, CopyMBps: r.copyMBps,
		}
		hosts := make([]HostDatastoreMetrics, len(r.hosts))
		for i, a := range r.actives {
			c := r.classes[i]
			if c.iops <= 0 {
				continue
			}
			readIOPS, writeIOPS := c.iops*c.read, c.iops*(1-c.read)
			t := DiskMetrics{
				ReadIOPS: readIOPS, WriteIOPS: writeIOPS,
				ReadOIO: readIOPS * c.readLatMs / 1000, WriteOIO: writeIOPS * c.writeLatMs / 1000,
				ReadKBps: readIOPS * a.p.sizeKB, WriteKBps: writeIOPS * a.p.sizeKB,
			}
			if readIOPS > 0 {
				t.ReadLatencyMs, t.ReadIOSizeKB = c.readLatMs, a.p.sizeKB
			}
			if writeIOPS > 0 {
				t.WriteLatencyMs, t.WriteIOSizeKB = c.writeLatMs, a.p.sizeKB
			}
			t.SmallSeeks, t.MediumSeeks, t.LargeSeeks = seekHistogram(c.iops*secs, a.p.randomPct/100, a.d.sizeGB)
			iv.Disks[a.d.key] = DiskStats{True: t, Measured: m.measureDisk(t, a.d.key, when)}

			st.ReadIOPS += readIOPS
			st.WriteIOPS += writeIOPS
			st.TotalOIO += a.p.oio
			st.ReadLatencyMs += readIOPS * c.readLatMs
			st.WriteLatencyMs += writeIOPS * c.writeLatMs
			h := &hosts[c.host]
			h.ReadIOPS += readIOPS
			h.WriteIOPS += writeIOPS
			h.ReadOIO += t.ReadOIO
			h.WriteOIO += t.WriteOIO
			h.ReadLatencyMs += readIOPS * c.readLatMs
			h.WriteLatencyMs += writeIOPS * c.writeLatMs
			h.ReadKBps += t.ReadKBps
			h.WriteKBps += t.WriteKBps
		}
		total := st.ReadIOPS + st.WriteIOPS
		if total > 0 {
			st.AvgLatencyMs = (st.ReadLatencyMs + st.WriteLatencyMs) / total
			latSum += st.ReadLatencyMs + st.WriteLatencyMs
			iv.TotalIOPS += total
		}
		st.ReadLatencyMs = safeDiv(st.ReadLatencyMs, st.ReadIOPS)
		st.WriteLatencyMs = safeDiv(st.WriteLatencyMs, st.WriteIOPS)
		iv.Datastores[r.ds.name] = st

		for i, name := range r.hosts {
			h := hosts[i]
			h.ReadLatencyMs = safeDiv(h.ReadLatencyMs, h.ReadIOPS)
			h.WriteLatencyMs = safeDiv(h.WriteLatencyMs, h.WriteIOPS)
			h.MaxQueueDepth = r.hostQD[i]
			h.SizeNormalizedLatencyUs = r.ds.dev.sizeNormalizedUs(h)
			key := HostDatastore{Host: name, Datastore: r.ds.name}
			iv.HostDatastores[key] = HostDatastoreStats{True: h, Measured: m.measureHost(h, &r.ds.dev, key, when)}
		}
	}
	iv.AvgLatencyMs = safeDiv(latSum, iv.TotalIOPS)
	return iv
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// seekHistogram splits an interval's IOs by seek distance. Sequential IOs start where the last
// ended (small); a random IO lands uniformly on the disk, so the distance between two random
// blocks of a disk of L blocks is below x with probability 2x/L - (x/L)².
func seekHistogram(ios, random, sizeGB float64) (small, medium, large float64) {
	blocks := sizeGB * (1 << 30) / 512
	below := func(x float64) float64 {
		if x >= blocks {
			return 1
		}
		f := x / blocks
		return 2*f - f*f
	}
	rnd := ios * random
	small = ios*(1-random) + rnd*below(smallSeekLBN)
	medium = rnd * (below(mediumSeekLBN) - below(smallSeekLBN))
	large = rnd * (1 - below(mediumSeekLBN))
	return small, medium, large
}

// sizeNormalizedUs scales a host's latency on the datastore to what a 16 KB IO would have seen:
// the ratio of the device's random service time for 16 KB to that for the host's mean IO size.
func (d *device) sizeNormalizedUs(h HostDatastoreMetrics) float64 {
	iops := h.ReadIOPS + h.WriteIOPS
	if iops == 0 {
		return 0
	}
	lat := (h.ReadIOPS*h.ReadLatencyMs + h.WriteIOPS*h.WriteLatencyMs) / iops
	size := (h.ReadKBps + h.WriteKBps) / iops
	service := func(kb float64) float64 {
		return d.controllerMs + d.position(false, 1) + d.transfer(kb)
	}
	return lat * service(normalizedSizeKB) / service(size) * 1000
}

func (m *Model) measureDisk(t DiskMetrics, k DiskKey, when uint64) DiskMetrics {
	base := mix(uint64(m.seed), saltNoise, when, hashString(k.VM), hashString(k.Unit))
	n := func(v float64, metric uint64, scale float64) float64 {
		return noisy(v, m.noiseSigma*scale, mix(base, metric))
	}
	out := DiskMetrics{
		ReadIOPS: n(t.ReadIOPS, mReadIOPS, 1), WriteIOPS: n(t.WriteIOPS, mWriteIOPS, 1),
		ReadLatencyMs: n(t.ReadLatencyMs, mReadLat, 1), WriteLatencyMs: n(t.WriteLatencyMs, mWriteLat, 1),
		ReadOIO: n(t.ReadOIO, mReadOIO, 1), WriteOIO: n(t.WriteOIO, mWriteOIO, 1),
		// IO sizes are exact per IO; their interval average barely moves.
		ReadIOSizeKB: n(t.ReadIOSizeKB, mReadSize, 0.1), WriteIOSizeKB: n(t.WriteIOSizeKB, mWriteSize, 0.1),
		SmallSeeks: n(t.SmallSeeks, mSmall, 1), MediumSeeks: n(t.MediumSeeks, mMedium, 1),
		LargeSeeks: n(t.LargeSeeks, mLarge, 1),
	}
	out.ReadKBps = out.ReadIOPS * out.ReadIOSizeKB
	out.WriteKBps = out.WriteIOPS * out.WriteIOSizeKB
	return out
}

func (m *Model) measureHost(t HostDatastoreMetrics, d *device, k HostDatastore, when uint64) HostDatastoreMetrics {
	base := mix(uint64(m.seed), saltNoise, when, hashString(k.Host), hashString(k.Datastore), 1)
	n := func(v float64, metric uint64) float64 { return noisy(v, m.noiseSigma, mix(base, metric)) }
	out := HostDatastoreMetrics{
		ReadIOPS: n(t.ReadIOPS, mReadIOPS), WriteIOPS: n(t.WriteIOPS, mWriteIOPS),
		ReadOIO: n(t.ReadOIO, mReadOIO), WriteOIO: n(t.WriteOIO, mWriteOIO),
		ReadLatencyMs: n(t.ReadLatencyMs, mReadLat), WriteLatencyMs: n(t.WriteLatencyMs, mWriteLat),
		MaxQueueDepth: t.MaxQueueDepth,
	}
	out.ReadKBps = t.ReadKBps * safeDiv(out.ReadIOPS, t.ReadIOPS)
	out.WriteKBps = t.WriteKBps * safeDiv(out.WriteIOPS, t.WriteIOPS)
	out.SizeNormalizedLatencyUs = d.sizeNormalizedUs(out)
	return out
}
