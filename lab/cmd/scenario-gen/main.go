// Command scenario-gen writes generated lab scenarios: BASIL §6.4-style random testbeds and the
// large scale-test datacenter.
//
//	scenario-gen random [--seed N] [--workloads 8] [--out FILE]
//	scenario-gen large  [--seed 2010] [--out FILE]
//
// The output is validated before it is written; the same seed always gives the same file.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/basil-project/basil/lab/internal/generate"
	"github.com/basil-project/basil/lab/internal/scenario"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	if len(args) == 0 || (args[0] != "random" && args[0] != "large") {
		return fmt.Errorf("usage: scenario-gen random|large [--seed N] [--workloads N] [--out FILE]")
	}
	kind := args[0]
	fs := flag.NewFlagSet("scenario-gen "+kind, flag.ContinueOnError)
	seed := fs.Int64("seed", generate.LargeSeed, "seed of the generator")
	workloads := fs.Int("workloads", 8, "number of workloads (random)")
	out := fs.String("out", "-", "file to write, - for standard output")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var s *scenario.Scenario
	switch kind {
	case "random":
		if *workloads < 1 || *workloads > 1000 {
			return fmt.Errorf("--workloads: must be between 1 and 1000, got %d", *workloads)
		}
		s = generate.Random(*seed, *workloads)
	case "large":
		s = generate.Large(*seed)
	}
	data, err := generate.Marshal(s)
	if err != nil {
		return err
	}
	if _, err := scenario.Parse(data, "generated"); err != nil {
		return fmt.Errorf("the generator produced an invalid scenario: %w", err)
	}
	if *out == "-" {
		_, err = os.Stdout.Write(data)
		return err
	}
	return os.WriteFile(*out, data, 0o644)
}
