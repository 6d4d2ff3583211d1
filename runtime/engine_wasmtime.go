//go:build wasmtime

package runtime

import (
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/engine/wasmtimeengine"
)

func init() {
	engines[EngineWasmtime] = func(c config) (engine.Engine, error) { return wasmtimeengine.New(c.cacheDir) }
}
