package main

import (
	"strings"
	"testing"
	"time"
)

func TestStartFlag(t *testing.T) {
	cfg, err := parseFlags([]string{"--scenario", "x.yaml", "--start", "2026-01-02T15:04:05Z"})
	if err != nil {
		t.Fatalf("parseFlags: %v", err)
	}
	want := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	if !cfg.start.Equal(want) {
		t.Fatalf("start = %v, want %v", cfg.start, want)
	}
	cfg, err = parseFlags([]string{"--scenario", "x.yaml"})
	if err != nil {
		t.Fatalf("parseFlags: %v", err)
	}
	if !cfg.start.IsZero() {
		t.Fatalf("start without --start = %v, want zero (now)", cfg.start)
	}
	_, err = parseFlags([]string{"--scenario", "x.yaml", "--start", "yesterday"})
	if err == nil || !strings.Contains(err.Error(), "--start") {
		t.Fatalf("a bad --start: err = %v, want one naming --start", err)
	}
}
