//go:build wasmtime

package wasmtimeengine

import (
	"github.com/bytecodealliance/wasmtime-go/v37"
	"github.com/wasmprov/wasmprov/runtime/internal/engine/wasmtimeengine/compiler"
)

// DefaultCompileMemoryLimit bounds the memory of the process compiling a
// module: several times what Cranelift needs for the real guests (on the
// 2-core test VM, hetzner.wasm, 11.5 MB: ≈ 340 MiB of data; the hcloud-go
// provider, 17.8 MB: ≈ 430 MiB), well below what a compile bomb takes (one
// 200 KB function of local.get/local.get/i32.add/local.set over 1,000
// locals: ≈ 840 MiB, per function compiled at once).
const DefaultCompileMemoryLimit = 2 << 30

// Option configures New.
type Option func(*options)

type options struct {
	compiler.Config
	inProcess bool
}

// WithCompileMemoryLimit bounds the memory of the process compiling a
// module (default DefaultCompileMemoryLimit; 0: unbounded). A compile that
// needs more fails with an error wrapping engine.ErrInvalidModule.
func WithCompileMemoryLimit(bytes int64) Option {
	return func(o *options) { o.MemoryLimit = max(bytes, 0) }
}

// WithInProcessCompile compiles in the calling process, as the engine does
// where it cannot start a compiler process: a compile past its context's
// deadline is abandoned but not stopped — it keeps its core and memory
// until Cranelift is done — and its memory is not bounded.
func WithInProcessCompile() Option { return func(o *options) { o.inProcess = true } }

// WithOptLevel sets Cranelift's optimisation level (default
// wasmtime.OptLevelSpeed). wasmtime.OptLevelNone compiles a Go guest about
// 1.3× faster and the pathological shapes up to 20× faster, for slower
// guest code; the compile deadline bounds either.
func WithOptLevel(level wasmtime.OptLevel) Option {
	return func(o *options) { o.OptLevel = level }
}
