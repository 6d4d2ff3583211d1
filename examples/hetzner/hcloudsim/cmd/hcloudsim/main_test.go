package main

import (
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
)

// Every hostile-cloud flag reaches its option.
func TestFlags(t *testing.T) {
	o, port, err := parse([]string{"-port", "8080", "-latency-p50", "200ms", "-latency-p99", "1s", "-error-rate", "0.05",
		"-drop-rate", "0.02", "-lost-answer-rate", "0.01", "-rps", "10", "-burst", "20", "-action-p99", "3s", "-boot-p99", "10s", "-seed", "42",
		"-delete-reads", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := hcloudsim.Options{Token: "sim-token", BootDuration: 2 * time.Second, ActionDuration: 500 * time.Millisecond,
		DeleteReads: 2, RateLimit: 3600, LatencyP50: 200 * time.Millisecond, LatencyP99: time.Second, ErrorRate: 0.05,
		DropRate: 0.02, LostAnswerRate: 0.01, RequestsPerSecond: 10, Burst: 20, ActionDurationP99: 3 * time.Second, BootDurationP99: 10 * time.Second, Seed: 42}
	if port != 8080 || !reflect.DeepEqual(o, want) { // Now is nil in both
		t.Fatalf("parsed %+v port %d, want %+v", o, port, want)
	}
	for _, bad := range [][]string{
		{"-latency-p99", "1s"}, {"-error-rate", "1.5"}, {"-drop-rate", "-0.1"}, {"-lost-answer-rate", "2"}, {"-rps", "-1"}, {"extra"},
	} {
		if _, _, err := parse(bad, io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
