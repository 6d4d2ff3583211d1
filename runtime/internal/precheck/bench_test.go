package precheck

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCheckHetzner: Check on the Hetzner provider (11.5 MB), which
// has a table to rewrite. cpu-ns/op is the process's CPU time a Check (on
// a shared machine, steadier than ns/op).
func BenchmarkCheckHetzner(b *testing.B) {
	wasm, err := os.ReadFile(testguest.Build(b, "examples/hetzner"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(wasm)))
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if _, err := Check(wasm, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
