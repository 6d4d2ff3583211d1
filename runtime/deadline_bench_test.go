package runtime_test

import (
	"context"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testguest"
	"github.com/wasmprov/wasmprov/runtime"
)

// benchDeadline measures a Get on the fake guest, with or without deadline
// enforcement (WithInterruptibleGuests).
func benchDeadline(b *testing.B, enforced bool, method string) {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.WithCompilationCacheDir(testguest.CompilationCacheDir(b)),
		runtime.WithInterruptibleGuests(enforced))
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	p, err := rt.Load(ctx, testguest.Build(b, "examples/fake"))
	if err != nil {
		b.Fatal(err)
	}
	cp := p.ContextProvider()
	m := testMachine()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		switch method {
		case "Get":
			if _, err := cp.Get(ctx, m); err != nil {
				b.Fatal(err)
			}
		case "Labels":
			if _, err := cp.MachineMetricsLabels(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkDeadlineGetUnenforced(b *testing.B)    { benchDeadline(b, false, "Get") }
func BenchmarkDeadlineGetEnforced(b *testing.B)      { benchDeadline(b, true, "Get") }
func BenchmarkDeadlineLabelsUnenforced(b *testing.B) { benchDeadline(b, false, "Labels") }
func BenchmarkDeadlineLabelsEnforced(b *testing.B)   { benchDeadline(b, true, "Labels") }
