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
//   - Compiling cannot be cancelled in wasmtime (Cranelift has shapes
//     within the host's load limits that take it minutes, even hours), so
//     on Linux it runs in a child process: the running binary, started
//     again (/proc/self/exe) with the environment variable
//     WASMPROV_WASMTIME_COMPILER and argv[0] "wasmprov-wasmtime-compiler",
//     which make the init of package compiler (a dependency of this one)
//     compile the module it reads on stdin with the engine's very
//     configuration (compiler.Config), write the serialized module to file
//     descriptor 3 and exit before main runs. An embedder's binary needs
//     nothing special for that; but the packages initialised before
//     package compiler — the standard library's and most github.com
//     modules' that sort before github.com/wasmprov (see its
//     documentation) — run their init in the child too, so an init there
//     must not have effects outside its process. Compile returns at its
//     context's deadline, and once no caller waits for the module any more
//     its compiler process is killed (SIGKILL; so is every one still
//     running at Close); a compiler process also exits as soon as its stdin
//     ends, which the kernel does when the engine's process dies. The
//     engine deserializes the result (bytes of its own binary, trusted as
//     the disk cache is). The compiler process bounds its own memory
//     (RLIMIT_DATA; WithCompileMemoryLimit, default
//     DefaultCompileMemoryLimit): a compile that needs more fails with
//     ErrInvalidModule ("compiling the module exceeded N MiB"), and a
//     compiler that crashes on a module fails that load, not the host.
//     Starting a compiler costs about 4 ms next to the seconds a Go guest
//     takes to compile; a cache hit, in memory or on disk, starts none.
//   - Where there is no compiler process — not Linux, no executable, or
//     WithInProcessCompile — modules compile in process, on a goroutine:
//     Compile still returns at its context's deadline, but the compile
//     goes on, taking a core and unbounded memory until Cranelift is done,
//     and a module compiled for no one is then released.
//   - Compiled code is cached in memory per engine and, with a cache
//     directory, on disk as wasmtime's serialized modules, keyed by the
//     instrumented module's SHA-256, the wasmtime-go version and, when not
//     the default, the optimisation level. The instrumented module and its
//     SHA-256 come from the same directory (package instrumented, shared
//     with the wazero engine), so a process with a warm cache neither
//     rewrites nor compiles a module.
package wasmtimeengine
