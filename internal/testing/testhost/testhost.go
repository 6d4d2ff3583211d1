// Package testhost builds the runtime the repository's tests run guests
// on. With cmd/wasmprov and conformance.RunT it is one of the three places
// that read runtime.EngineEnv, so
// `make test-wasmtime` (WASMPROV_ENGINE=wasmtime) moves every suite that
// goes through it to wasmtime, while runtime itself never reads the
// environment.
package testhost

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime"
)

// Engine is the engine $WASMPROV_ENGINE names, or "" (the runtime's
// default, wazero) when it is unset.
func Engine() runtime.Engine { return runtime.Engine(os.Getenv(runtime.EngineEnv)) }

// EngineOption selects Engine().
func EngineOption() runtime.Option { return runtime.WithEngine(Engine()) }

// NewRuntime returns a Runtime on Engine() with the shared test compilation
// cache (testguest.CompilationCacheDir), closed when tb ends. A benchmark's
// runtime logs nothing, so its output stays parseable by benchstat. opts
// come after these and override them.
func NewRuntime(tb testing.TB, opts ...runtime.Option) *runtime.Runtime {
	tb.Helper()
	base := []runtime.Option{EngineOption(), runtime.WithCompilationCacheDir(testguest.CompilationCacheDir(tb))}
	if _, bench := tb.(*testing.B); bench {
		base = append(base, runtime.WithLogger(slog.New(slog.DiscardHandler)))
	}
	rt, err := runtime.New(append(base, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}
