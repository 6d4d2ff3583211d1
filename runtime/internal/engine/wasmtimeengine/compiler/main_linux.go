//go:build wasmtime && linux

package compiler

import (
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/bytecodealliance/wasmtime-go/v37"
)

func init() {
	v, ok := os.LookupEnv(Env)
	if !ok || len(os.Args) == 0 || os.Args[0] != Arg0 {
		return
	}
	os.Exit(compilerMain(v))
}

// compilerMain is the compiler process: it bounds its own memory, reads the
// module, compiles it with the engine's configuration and writes the
// serialized module to ResultFD. It exits as soon as its stdin ends (the
// engine's process closed it, was killed or died), so no compile outlives
// the engine's process.
func compilerMain(setting string) int {
	out := os.NewFile(ResultFD, "compiler result")
	if out == nil {
		return ExitUsage
	}
	fail := func(code int, format string, args ...any) int {
		_ = WriteFrame(out, []byte(fmt.Sprintf(format, args...)))
		return code
	}
	c, err := Decode(setting)
	if err != nil {
		return fail(ExitUsage, "%v", err)
	}
	if c.MemoryLimit > 0 {
		// RLIMIT_DATA counts the writable private mappings — Go's heap,
		// malloc's, thread stacks — but not the address space Go only
		// reserves, so the limit is on the memory the compile can use.
		lim := syscall.Rlimit{Cur: uint64(c.MemoryLimit), Max: uint64(c.MemoryLimit)}
		if err := syscall.Setrlimit(syscall.RLIMIT_DATA, &lim); err != nil {
			return fail(ExitUsage, "setting the compiler's memory limit: %v", err)
		}
	}
	wasm, err := ReadRequest(os.Stdin)
	if err != nil {
		return fail(ExitUsage, "%v", err)
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(ExitParentGone)
	}()
	mod, err := wasmtime.NewModule(wasmtime.NewEngineWithConfig(c.WasmtimeConfig()), wasm)
	if err != nil {
		return fail(ExitInvalid, "%v", err)
	}
	b, err := mod.Serialize()
	if err != nil {
		return fail(ExitUsage, "serializing the module: %v", err)
	}
	if err := WriteFrame(out, b); err != nil {
		return ExitParentGone
	}
	return 0
}
