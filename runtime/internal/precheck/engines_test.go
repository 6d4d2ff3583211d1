package precheck

import (
	"context"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
)

// compilers: the engines the worst-case measurements compile with, by
// name; wasmtime's registers itself under the wasmtime build tag.
var compilers = map[string]func(wasm []byte) (time.Duration, error){
	"wazero": func(wasm []byte) (time.Duration, error) { return compileWazero(nil, wasm) },
}

// compileWazero compiles wasm as the wazero engine does (two compilation
// workers) and returns how long it took.
func compileWazero(tb testing.TB, wasm []byte) (time.Duration, error) {
	ctx := experimental.WithCompilationWorkers(context.Background(), 2)
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	start := time.Now()
	m, err := rt.CompileModule(ctx, wasm)
	d := time.Since(start)
	if err == nil {
		m.Close(ctx)
	}
	return d, err
}
