//go:build wasmtime

package precheck

import (
	"os"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v37"
)

func init() { compilers["wasmtime"] = compileWasmtime }

// compileWasmtime compiles wasm as the runtime's wasmtime engine
// configures it (multi-memory for the interrupt flag, Cranelift at
// OptLevelSpeed).
func compileWasmtime(wasm []byte) (time.Duration, error) {
	cfg := wasmtime.NewConfig()
	cfg.SetWasmMultiMemory(true)
	cfg.SetCraneliftOptLevel(wasmtime.OptLevelSpeed)
	if os.Getenv("WASMPROV_PRECHECK_OPT") == "none" {
		cfg.SetCraneliftOptLevel(wasmtime.OptLevelNone)
	}
	eng := wasmtime.NewEngineWithConfig(cfg)
	defer eng.Close()
	start := time.Now()
	m, err := wasmtime.NewModule(eng, wasm)
	d := time.Since(start)
	if err == nil {
		m.Close()
	}
	return d, err
}
