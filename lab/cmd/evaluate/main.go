// Command evaluate drives the lab's storage physics for Basil's evaluation (benchmarks/evaluation):
// it describes a scenario, measures a placement as vCenter would report it, scores placements
// against the ground truth, and finds a small pod's best placement by exhaustive search. Every
// subcommand reads one JSON request on standard input and writes one JSON answer on standard output.
//
//	evaluate describe   {"source": SOURCE}
//	evaluate measure    {"source": SOURCE, "placement": {"vm/unit": "datastore"}, "start": 90, "warmup": 9, "intervals": 30}
//	evaluate score      {"source": SOURCE, "placements": [{...}, ...], "start": 90, "warmup": 9, "intervals": 15}
//	evaluate best       {"source": SOURCE, "start": 90, "warmup": 9, "intervals": 15, "headroom_pct": 10}
//
// SOURCE is {"file": "scenarios/basil-6.2.yaml", "seed": 3} (the file, its seed replaced when
// given) or {"family": "random" | "hetero" | "large", "seed": 7, "workloads": 8, "stores": 20}
// (internal/generate). A placement lists the disks ("vm/unit") that are not where the scenario put
// them. Interval k ends k × 20 s after the scenario's start; a request simulates intervals
// start−warmup+1 … start+intervals from an empty write cache and reports the last `intervals`.
//
// The ground truth of a placement is the physics' noise-free figures of the pod's disks: total IOPS
// and IOPS-weighted latency, averaged over the reported intervals. Datastores are solved
// independently by the physics, so a placement's truth is the sum of its datastores' truths, each
// computed once per set of disks on it; that is what makes exhaustive search affordable.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
}

func run(args []string, in io.Reader, out io.Writer) error {
	if len(args) != 1 {
		return errors.New("usage: evaluate describe|measure|score|best < request.json")
	}
	var req request
	dec := json.NewDecoder(in)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return fmt.Errorf("request: %w", err)
	}
	var answer any
	var err error
	switch args[0] {
	case "describe":
		answer, err = describe(&req)
	case "measure":
		answer, err = measure(&req)
	case "score":
		answer, err = score(&req)
	case "best":
		answer, err = best(&req)
	default:
		return fmt.Errorf("unknown subcommand %q: want describe, measure, score or best", args[0])
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	return enc.Encode(answer)
}
