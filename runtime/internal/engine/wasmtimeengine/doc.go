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
//   - WASI. wasmtime's WASI serves the guest, but the functions through
//     which a guest could reach the host's clock, randomness, sleep or
//     terminal are shadowed: fd_write goes to the instance's writers,
//     clock_time_get and random_get are fake unless granted, and
//     poll_oneoff sleeps only when the clock is granted, and then no longer
//     than the call's context allows.
//   - Compiled code is cached in memory per engine and, with a cache
//     directory, on disk as wasmtime's serialized modules, keyed by the
//     instrumented module's SHA-256 and the wasmtime-go version.
package wasmtimeengine
