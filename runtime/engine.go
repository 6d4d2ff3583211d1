package runtime

import (
	"errors"
	"sort"

	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/engine/wazeroengine"
	"github.com/wasmprov/wasmprov/runtime/internal/mmapmem"
)

// Engine names the WebAssembly engine a Runtime runs guests on. Both run
// the same modules under the same ABI, policies, pool and error semantics;
// they differ in cost (docs/BENCHMARKS.md) and build requirements.
type Engine string

const (
	// EngineWazero is wazero: pure Go, no cgo, the default.
	EngineWazero Engine = "wazero"
	// EngineWasmtime is wasmtime through wasmtime-go (cgo, a static
	// library of ~57 MB downloaded with the module). It is compiled in only
	// with the build tag "wasmtime": `go build -tags wasmtime`.
	EngineWasmtime Engine = "wasmtime"
)

// EngineEnv names the environment variable that the wasmprov CLI and the
// test suites read to choose an engine (`WASMPROV_ENGINE=wasmtime make
// test-wasmtime`). The runtime itself never reads it: an embedder chooses
// with WithEngine, so no variable in a controller's environment changes
// which engine runs untrusted code.
const EngineEnv = "WASMPROV_ENGINE"

// ErrEngineUnavailable is returned by New for an engine this binary was not
// built with.
var ErrEngineUnavailable = errors.New("engine not available in this build (wasmtime needs -tags wasmtime)")

// WithEngine selects the engine (default EngineWazero; an empty e means the
// default too).
func WithEngine(e Engine) Option { return func(c *config) { c.engine = e } }

// engines are the engines compiled into this binary.
var engines = map[Engine]func(config) (engine.Engine, error){
	EngineWazero: newWazero,
}

// Engines lists the engines compiled into this binary.
func Engines() []Engine {
	out := make([]Engine, 0, len(engines))
	for e := range engines {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// newWazero backs linear memories with mmap'd address space where the
// platform allows (runtime/internal/mmapmem): no copy when a memory grows,
// and its pages go back to the OS as soon as the instance is closed.
func newWazero(c config) (engine.Engine, error) {
	var opts []wazeroengine.Option
	if a := mmapmem.New(); a != nil {
		opts = append(opts, wazeroengine.WithMappedMemory(a))
	}
	return wazeroengine.New(c.cacheDir, opts...)
}

// Engine reports the engine r runs guests on.
func (r *Runtime) Engine() Engine { return r.cfg.engine }
