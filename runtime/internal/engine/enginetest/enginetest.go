// Package enginetest is the test suite every engine passes (Run* functions,
// each run from a Test function of the engine's package) and the list of
// engines compiled into the test binary for packages whose tests run on
// each (Engines). It is imported by tests only.
package enginetest

import (
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/engine/wazeroengine"
	"github.com/wasmprov/wasmprov/runtime/internal/instrumented"
)

// NewEngine returns an engine caching in cacheDir ("" for memory), closed
// when t ends.
type NewEngine func(t testing.TB, cacheDir string) engine.Engine

// Engine is an engine as the tests of other packages run it.
type Engine struct {
	Name string
	New  NewEngine
}

// engines are wazero and, with the build tag, wasmtime (wasmtime.go).
var engines = []Engine{{"wazero", NewWazero}}

// Engines lists the engines compiled into the test binary, wazero first.
func Engines() []Engine { return engines }

// NewWazero is a NewEngine for wazeroengine.
func NewWazero(t testing.TB, cacheDir string) engine.Engine {
	e, err := wazeroengine.New(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

// Instrumenting is an engine whose instrumented modules come from an
// instrumented.Cache: every engine is one.
type Instrumenting interface {
	Instrumented() *instrumented.Cache
}

// Fixture returns runtime/testdata/abi/<name>, found from this file's
// directory so that tests of any package can use it.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	_, file, _, ok := goruntime.Caller(0)
	if !ok {
		t.Fatal("enginetest: no source path for the fixtures")
	}
	wasm, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "abi", name))
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}
