// Package wasmtimeengine runs modules on wasmtime through wasmtime-go (cgo).
// It is compiled only with the build tag "wasmtime", so the default build
// of wasmprov stays pure Go.
//
// What differs from the wazero engine, and why (see runtime/RATIONALE.md):
//
//   - Interruption. wasmtime-go cannot touch a store from another thread
//     while it runs, and its epochs are engine-wide and only trap (the epoch
//     callback is not bound), so they cannot stop one call among many.
//     Modules are instead instrumented to check word 0 of an added one-page
//     memory (interrupt.FlagMemory); wasmtime never moves a memory's base,
//     so Interrupt stores to it from any goroutine.
//   - WASI. wasmtime's WASI is not used at all: wasmprov's own (package
//     wasip1), which the wazero engine binds too, serves the guest, so a
//     guest sees the same errnos, fakes and memory effects on both engines.
//     An instance is a store whose imports are created for it, in import
//     order (no linker): only the functions the module imports.
//   - Host calls are interruption points: once Interrupt was called, every
//     host function traps instead of running, and a sleeping poll_oneoff
//     wakes up.
//   - Features: the proposals wazero enables by default, plus multi-memory;
//     threads off (an atomic wait could block past any deadline).
//   - Compiling cannot be cancelled in wasmtime, so it runs on a goroutine:
//     Compile returns at its context's deadline, and a module compiled for
//     no one is released when it is done.
//   - Compiled code is cached in memory per engine and, with a cache
//     directory, on disk as wasmtime's serialized modules, keyed by the
//     instrumented module's SHA-256 and the wasmtime-go version.
package wasmtimeengine
