package runtime_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/internal/hostmodule/wazerohost"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime"
)

// The deadline benchmarks compare a fake-guest call with and without
// deadline enforcement (docs/BENCHMARKS.md):
//
//   - Runtime/{Unenforced,Enforced}: through runtime.Provider, with
//     WithInterruptibleGuests(false) and (true): the interrupt-flag
//     instrumentation plus context.AfterFunc.
//   - Wazero/{Unenforced,CloseOnDone}: the same call driven directly with
//     wazero, without and with WithCloseOnContextDone, the mechanism the
//     instrumentation replaces.

func benchRuntime(b *testing.B, enforced bool, method string) {
	ctx := context.Background()
	rt := newRuntime(b, runtime.WithInterruptibleGuests(enforced))
	p, err := rt.Load(ctx, testguest.Build(b, "examples/fake"))
	if err != nil {
		b.Fatal(err)
	}
	cp := p
	m := testMachine()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		switch method {
		case "Get":
			if _, err := cp.Get(ctx, m, nil); err != nil {
				b.Fatal(err)
			}
		case "Labels":
			if _, err := cp.MachineMetricsLabels(ctx, m, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchWazero calls the fake guest's Get the way the runtime does (a Call
// in the context, a per-call timeout, the output decoded), straight on
// wazero.
func benchWazero(b *testing.B, closeOnDone bool) {
	ctx := context.Background()
	wasm, err := os.ReadFile(testguest.Build(b, "examples/fake"))
	if err != nil {
		b.Fatal(err)
	}
	cache, err := wazero.NewCompilationCacheWithDir(testguest.CompilationCacheDir(b))
	if err != nil {
		b.Fatal(err)
	}
	defer cache.Close(ctx)
	wr := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache).
		WithCloseOnContextDone(closeOnDone))
	defer wr.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, wr)
	if _, err := wazerohost.Instantiate(ctx, wr); err != nil {
		b.Fatal(err)
	}
	compiled, err := wr.CompileModule(ctx, wasm)
	if err != nil {
		b.Fatal(err)
	}
	mod, err := wr.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").
		WithStartFunctions(abi.ExportInitialize).WithEnv("GOGC", "50"))
	if err != nil {
		b.Fatal(err)
	}
	get := mod.ExportedFunction(abi.MethodGet.Export())
	env := &hostmodule.Env{Provider: "fake", Logger: slog.New(slog.DiscardHandler)}
	m := testMachine()
	var stack [1]uint64
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		call := hostmodule.NewCall(cctx, env, abi.MethodGet, abi.CapLog)
		call.Machine = m
		if err := get.CallWithStack(hostmodule.WithCall(cctx, call), stack[:]); err != nil || stack[0] != 0 {
			b.Fatal(err, stack[0])
		}
		cancel()
		var inst abi.Instance
		if err := json.Unmarshal(call.Output, &inst); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDeadline(b *testing.B) {
	b.Run("Runtime/Get/Unenforced", func(b *testing.B) { benchRuntime(b, false, "Get") })
	b.Run("Runtime/Get/Enforced", func(b *testing.B) { benchRuntime(b, true, "Get") })
	b.Run("Runtime/Labels/Unenforced", func(b *testing.B) { benchRuntime(b, false, "Labels") })
	b.Run("Runtime/Labels/Enforced", func(b *testing.B) { benchRuntime(b, true, "Labels") })
	b.Run("Wazero/Get/Unenforced", func(b *testing.B) { benchWazero(b, false) })
	b.Run("Wazero/Get/CloseOnDone", func(b *testing.B) { benchWazero(b, true) })
}
