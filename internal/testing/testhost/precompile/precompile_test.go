// Package precompile is a helper program built as a test binary: it
// compiles guest modules into a compilation cache directory, as the
// runtime's Inspect does before it calls their exports.
//
// The tests under the race detector run it (through testguest, when make
// test sets $WASMPROV_TEST_PRECOMPILE to this binary built without -race)
// on every guest they build: wazero's compiler, race-instrumented, takes
// about ten times as long to compile a Go guest (hetzner: 29 s against
// 2.4 s), and the race tests then find the compiled code in the shared
// cache. What it compiles is what the tests would: the same runtime and
// engine, the same bytes.
//
// Why a test binary (go test -c)? wazero keys its cache directory by its
// own module version, read from the binary's build information; a test
// binary has none and says "dev", a go build one says "v1.12.0". Built
// as a test binary, this helper writes where the tests read.
//
//	precompile -cache DIR GUEST.wasm...
//
// Run by go test without -cache, it does nothing.
package precompile

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/wasmprov/wasmprov/runtime"
)

var cacheDir = flag.String("cache", "", "the compilation cache directory: run as the precompile helper")

func TestMain(m *testing.M) {
	flag.Parse()
	if *cacheDir == "" {
		os.Exit(m.Run())
	}
	if err := precompile(*cacheDir, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "precompile:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func precompile(dir string, files []string) error {
	engine := runtime.Engine(os.Getenv(runtime.EngineEnv))
	if engine != "" && engine != runtime.EngineWazero {
		return nil // the wasmtime engine compiles outside the race detector anyway
	}
	ctx := context.Background()
	rt, err := runtime.New(runtime.WithEngine(engine),
		runtime.WithCompilationCacheDir(dir), runtime.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	for _, f := range files {
		wasm, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		// A module Inspect refuses is left for the test to compile (and
		// refuse) itself: compiling ahead is only a saving.
		_, _ = rt.Inspect(ctx, wasm)
	}
	return nil
}
