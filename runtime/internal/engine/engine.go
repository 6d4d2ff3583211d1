// Package engine is the seam between the wasmprov runtime and a WebAssembly
// engine. The runtime owns everything a provider's behaviour depends on —
// the ABI, validation, the pool, deadlines, policies, error semantics — and
// an engine only compiles, instantiates, calls and interrupts. Host
// functions come in as hostmodule.Function values, so they are written once
// and bound by each engine.
//
// Two engines exist: wazero (pure Go, the default, package
// engine/wazeroengine) and wasmtime (cgo, behind the "wasmtime" build tag,
// package engine/wasmtimeengine). Both instrument interruptible modules
// through package instrumented, which caches them next to their compiled
// code.
package engine

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/runtime/internal/instrumented"
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// Engine compiles modules. One Engine serves every provider of a Runtime,
// so compiled code is shared between versions and names of the same module.
type Engine interface {
	// Name is the engine's name as users select it ("wazero", "wasmtime").
	Name() string
	// Compile checks and compiles wasm, binding the host functions. A
	// module that does not decode or validate returns an error wrapping
	// ErrInvalidModule.
	Compile(ctx context.Context, wasm []byte, cfg ModuleConfig) (Module, error)
	// Close releases the engine; modules must be closed first.
	Close(ctx context.Context) error
}

// ModuleConfig is what a module's instances are limited to and bound with.
type ModuleConfig struct {
	// MemoryLimitPages caps each instance's linear memory (64 KiB pages).
	MemoryLimitPages uint32
	// Interruptible instruments the module so Instance.Interrupt stops a
	// running call at its next check or host function call.
	Interruptible bool
	// HostFunctions are the host functions bound for the module: the
	// wasmprov_v1 imports and an embedder's custom ones (hostmodule.Table),
	// each under its own import module.
	HostFunctions []hostmodule.Function

	// Digest is the SHA-256 of the module given to Compile when the
	// caller has it (the zero value: the engine computes it if it needs
	// it), so a load hashes an 11 MB module once.
	Digest [sha256.Size]byte
	// Check, when not nil, vets the module before anything else reads it
	// and returns the module to compile (the runtime's precheck against its
	// limits); its error is returned by Compile unchanged. An engine runs it
	// on every Compile but when its instrumented cache holds the module
	// checked under the same CheckKey, which names what Check decides (its
	// limits): the cache keeps only modules that passed.
	Check    func([]byte) ([]byte, error)
	CheckKey string
}

// Checked returns Check's verdict on wasm: the module to compile, or
// Check's error. Without a Check it is wasm.
func (c ModuleConfig) Checked(wasm []byte) ([]byte, error) {
	if c.Check == nil {
		return wasm, nil
	}
	return c.Check(wasm)
}

// Instrumentable is what package instrumented gets of a compile: the
// module, its digest and its check.
func (c ModuleConfig) Instrumentable(wasm []byte) instrumented.Source {
	return instrumented.Source{Wasm: wasm, Digest: c.Digest, Check: c.Check, CheckKey: c.CheckKey}
}

// Module is a compiled module.
type Module interface {
	// ExportedFunctions are the module's function exports by name.
	ExportedFunctions() map[string]Signature
	// ExportedMemories are the names of its memory exports.
	ExportedMemories() []string
	// ImportedFunctions are its function imports, in order.
	ImportedFunctions() []Import
	// Instantiate creates an instance; it does not run any start function
	// but the module's own (wasm start section): the caller runs
	// _initialize under its deadline.
	Instantiate(ctx context.Context, cfg InstanceConfig) (Instance, error)
	// Close releases the module; its instances must be closed first.
	Close(ctx context.Context) error
}

// InstanceConfig is the WASI view of one instance.
type InstanceConfig struct {
	// Env is the environment, as "KEY=value" strings.
	Env []string
	// Stdout and Stderr receive the guest's output (nil discards it).
	Stdout, Stderr io.Writer
	// Clock gives the guest the real wall and monotonic clocks and lets it
	// sleep; without it, clocks are fake and sleeping returns at once.
	Clock bool
	// Random is the source of WASI random_get; nil, as the host always
	// passes it, is crypto/rand. Only tests give another (a fixed stream,
	// to compare the engines' WASI with wazero's call by call).
	Random io.Reader
}

// Instance is one instantiated module, used by one goroutine at a time
// (Interrupt excepted).
type Instance interface {
	// Function returns the exported function name, or nil. Look functions
	// up once: a lookup may cost microseconds, a call nanoseconds.
	Function(name string) Function
	// Interruptible reports whether Interrupt can stop a running call.
	Interruptible() bool
	// Interrupt makes the call running on the instance trap at its next
	// check. It is safe from any goroutine. An interrupted instance must be
	// closed, never called again.
	Interrupt()
	// Close releases the instance.
	Close(ctx context.Context) error
}

// Function is an exported function of an instance.
type Function interface {
	// Call runs the function with its parameters in stack and leaves its
	// results there. ctx reaches the host functions it calls. An error is a
	// trap, an interrupt or an exit (*ExitError).
	Call(ctx context.Context, stack []uint64) error
}

// ValueType is a value type in its binary encoding (wasmbin.ValueTypeI32,
// ...). Host functions declare theirs as hostmodule.ValueType, the same
// byte: internal/hostmodule, outside runtime/, cannot import wasmbin, so the
// two constants it has are checked equal to wasmbin's here, at compile time.
type ValueType = wasmbin.ValueType

var (
	_ [0]struct{} = [hostmodule.I32 ^ wasmbin.ValueTypeI32]struct{}{}
	_ [0]struct{} = [hostmodule.I64 ^ wasmbin.ValueTypeI64]struct{}{}
)

// Signature is a function type.
type Signature struct{ Params, Results []ValueType }

// Import is a function import.
type Import struct {
	Module, Name string
	Signature
}

// ErrInvalidModule wraps the error of a module that does not decode,
// validate or link. It is the runtime's ErrInvalidModule too, so an
// engine's error reaches the caller unchanged: "invalid provider module:
// not a valid WebAssembly module: ...".
var ErrInvalidModule = errors.New("invalid provider module")

// ExitError is returned by a call in which the guest exited (WASI
// proc_exit).
type ExitError struct{ Code uint32 }

func (e *ExitError) Error() string { return fmt.Sprintf("guest exited with code %d", e.Code) }
