package interrupt

import (
	"context"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
)

// goGuest builds testdata/goguest (a Go guest: JSON, maps, sorting) and
// returns its module.
func goGuest(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile(testguest.Build(tb, "runtime/internal/interrupt/testdata/goguest"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// goGuestModule instantiates the Go guest (as it is, or instrumented with
// FlagBudget when budget is set) in a new wazero runtime, with WASI and a
// yield function that calls yield.
func goGuestModule(ctx context.Context, tb testing.TB, wasm []byte, budget bool, yield func()) api.Module {
	tb.Helper()
	if budget {
		var err error
		if wasm, err = InstrumentWith(wasm, FlagBudget); err != nil {
			tb.Fatal(err)
		}
	}
	r := wazero.NewRuntime(ctx)
	tb.Cleanup(func() { r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	if _, err := r.NewHostModuleBuilder(YieldModule).NewFunctionBuilder().WithFunc(yield).Export(YieldName).Instantiate(ctx); err != nil {
		tb.Fatal(err)
	}
	m, err := r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// BenchmarkGoGuest: the instrumentation's cost on a Go guest's work (what a
// provider's Validate does), uninstrumented and with FlagBudget, in the same
// process; yields/op says how often the budget runs out.
func BenchmarkGoGuest(b *testing.B) {
	ctx := context.Background()
	wasm := goGuest(b)
	for _, c := range []struct {
		name   string
		budget bool
	}{{"none", false}, {"FlagBudget", true}} {
		b.Run(c.name, func(b *testing.B) {
			yields := 0
			m := goGuestModule(ctx, b, wasm, c.budget, func() { yields++ })
			work := m.ExportedFunction("work")
			want, err := work.Call(ctx, 20)
			if err != nil {
				b.Fatal(err)
			}
			yields = 0
			for b.Loop() {
				res, err := work.Call(ctx, 20)
				if err != nil || res[0] != want[0] {
					b.Fatal(res, err)
				}
			}
			b.ReportMetric(float64(yields)/float64(b.N), "yields/op")
		})
	}
}

// TestGoGuestSameResults: the Go guest computes the same with and without
// FlagBudget.
func TestGoGuestSameResults(t *testing.T) {
	ctx := context.Background()
	wasm := goGuest(t)
	orig := goGuestModule(ctx, t, wasm, false, func() {})
	yields := 0
	inst := goGuestModule(ctx, t, wasm, true, func() { yields++ })
	for _, n := range []uint64{0, 1, 7, 200} {
		want, err := orig.ExportedFunction("work").Call(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := inst.ExportedFunction("work").Call(ctx, n)
		if err != nil || got[0] != want[0] {
			t.Fatalf("work(%d) = %v, %v; want %v", n, got, err, want)
		}
	}
	t.Logf("%d yields", yields)
}
