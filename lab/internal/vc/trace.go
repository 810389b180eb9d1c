package vc

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// A request trace of one virtual disk, for Basil's capacity planning (Lu's RTT and Miser): the
// disk's solved intervals give its read and write IOPS, latencies and IO sizes (bursts and phases of
// its workload included, as the physics solved them); within an interval, requests arrive in
// batches, as a closed loop of outstanding IOs submits them (Casale et al. saw batched submission in
// ESX): batch starts form a Poisson process, a batch's size is geometric with the disk's mean
// outstanding IOs as its mean, and a batch's requests leave 50 µs apart. The trace is the same for
// the same disk, intervals and seed.

// TraceFormats are the formats WriteTrace writes.
var TraceFormats = []string{"spc", "csv"}

const (
	traceBatchGap   = 50e-6 // seconds between the requests of one batch
	traceSectorSize = 512
)

type traceInterval struct {
	end                 time.Time
	readIOPS, writeIOPS float64
	readMs, writeMs     float64
	readKBps, writeKBps float64
}

// WriteTrace writes the requests of the disk (VM name, unit "scsi0:1") over the last n solved
// intervals in the SPC format (ASU,LBA,size,opcode,timestamp) or CSV (timestamp,size,opcode),
// timestamps in seconds from the first interval's start. It returns the number of requests.
func (l *Lab) WriteTrace(out io.Writer, vm, unit string, n int, format string, seed int64) (int, error) {
	index, capacityKB, err := l.CheckTrace(vm, unit, n, format)
	if err != nil {
		return 0, err
	}
	var intervals []traceInterval
	l.perf.withLast(n, func(samples []*sample) {
		for _, s := range samples {
			v := s.diskTruth[index*truthFields : (index+1)*truthFields]
			intervals = append(intervals, traceInterval{
				end: s.end, readIOPS: float64(v[0]), writeIOPS: float64(v[1]), readMs: float64(v[2]),
				writeMs: float64(v[3]), readKBps: float64(v[4]), writeKBps: float64(v[5]),
			})
		}
	})
	h := fnv.New64a()
	_, _ = h.Write([]byte(vm + "\x00" + unit))
	rng := rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
	w := bufio.NewWriterSize(out, 1<<16)
	step := IntervalLength
	start := intervals[0].end.Add(-step)
	sectors := max(1, capacityKB*1024/traceSectorSize)
	count := 0
	var line []byte
	for _, iv := range intervals {
		from := iv.end.Add(-step).Sub(start).Seconds()
		to := iv.end.Sub(start).Seconds()
		rate := iv.readIOPS + iv.writeIOPS
		if rate <= 0 {
			continue
		}
		oio := (iv.readIOPS*iv.readMs + iv.writeIOPS*iv.writeMs) / 1000
		batch := math.Max(1, oio) // mean batch size
		readShare := iv.readIOPS / rate
		readBytes := sizeOf(iv.readKBps, iv.readIOPS)
		writeBytes := sizeOf(iv.writeKBps, iv.writeIOPS)
		t := from + rng.ExpFloat64()*batch/rate
		for t < to {
			// geometric batch size with mean `batch`: P(k) = p (1-p)^(k-1), p = 1/batch
			size := 1
			if batch > 1 {
				size = 1 + int(math.Floor(math.Log(1-rng.Float64())/math.Log(1-1/batch)))
			}
			for k := 0; k < size; k++ {
				at := t + float64(k)*traceBatchGap
				if at >= to {
					break
				}
				read := rng.Float64() < readShare
				op, nbytes := "W", writeBytes
				if read {
					op, nbytes = "R", readBytes
				}
				line = line[:0]
				stamp := strconv.AppendFloat(nil, at, 'f', 6, 64)
				if format == "spc" {
					line = append(line, "0,"...)
					line = strconv.AppendInt(line, rng.Int64N(sectors), 10)
					line = append(line, ',')
					line = strconv.AppendInt(line, nbytes, 10)
					line = append(line, ',')
					line = append(line, op...)
					line = append(line, ',')
					line = append(line, stamp...)
				} else {
					line = append(line, stamp...)
					line = append(line, ',')
					line = strconv.AppendInt(line, nbytes, 10)
					line = append(line, ',')
					line = append(line, op...)
				}
				line = append(line, '\n')
				if _, err := w.Write(line); err != nil {
					return count, err
				}
				count++
			}
			// The next batch starts after this one has left (the trace stays in time order).
			t += max(rng.ExpFloat64()*batch/rate, float64(size)*traceBatchGap)
		}
	}
	return count, w.Flush()
}

// CheckTrace says what is wrong with a trace request, before anything is written; it returns the
// disk's index and capacity.
func (l *Lab) CheckTrace(vm, unit string, n int, format string) (int, int64, error) {
	if format != "spc" && format != "csv" {
		return 0, 0, fmt.Errorf("format: must be spc or csv, got %q", format)
	}
	if n < 1 || n > HistoryIntervals {
		return 0, 0, fmt.Errorf("intervals: must be between 1 and %d, got %d", HistoryIntervals, n)
	}
	for i, d := range l.inv.disks {
		if d.vm.name == vm && d.unit == unit {
			solved := 0
			l.perf.withLast(1, func(samples []*sample) { solved = len(samples) })
			if solved == 0 {
				return 0, 0, fmt.Errorf("no interval has been solved yet (step the clock)")
			}
			return i, d.capacityKB, nil
		}
	}
	return 0, 0, fmt.Errorf("vm, unit: no disk %s of VM %q", unit, vm)
}

// sizeOf is the mean IO size in bytes from KB/s and IO/s, in whole sectors (4 KB when unknown).
func sizeOf(kbps, iops float64) int64 {
	if iops <= 0 || kbps <= 0 {
		return 4096
	}
	sectors := math.Max(1, math.Round(kbps*1024/iops/traceSectorSize))
	return int64(sectors) * traceSectorSize
}
