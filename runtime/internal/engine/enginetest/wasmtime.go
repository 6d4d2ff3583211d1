//go:build wasmtime

package enginetest

import (
	"context"
	"testing"

	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/engine/wasmtimeengine"
)

func init() { engines = append(engines, Engine{"wasmtime", NewWasmtime}) }

// NewWasmtime is a NewEngine for wasmtimeengine (compiling in a compiler
// process, as the runtime does).
func NewWasmtime(t testing.TB, cacheDir string) engine.Engine {
	e, err := wasmtimeengine.New(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}
