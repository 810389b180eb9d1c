package main

import (
	"bytes"
	"strings"
	"testing"
)

// The report runs from the committed scenarios and every throughput x latency / OIO check is 1.
func TestReport(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"--scenarios", "../../scenarios", "--minutes", "5"}, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"Latency against total outstanding IOs", "Latency against spindle count",
		"FC against SATA against SSD", "Little's law per disk", "basil-6.2 against BASIL Tables 2-3", "enterprise against BASIL Table 9"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	section := text[strings.Index(text, "Latency against total outstanding IOs"):strings.Index(text, "Latency against spindle count")]
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 8 && fields[0] != "total" {
			rows++
			if fields[7] != "1.00" {
				t.Errorf("IOPS x latency / OIO is %s in %q", fields[7], line)
			}
		}
	}
	if rows != 10 {
		t.Errorf("%d rows in the OIO table", rows)
	}
}

func TestReportRefusesBadFlags(t *testing.T) {
	if err := run([]string{"--minutes", "0"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--minutes") {
		t.Errorf("--minutes 0: %v", err)
	}
	if err := run([]string{"--scenario", "nope.yaml"}, &bytes.Buffer{}); err == nil {
		t.Error("a missing scenario file was accepted")
	}
}
