//go:build wasmtime && linux

package wasmtimeengine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v37"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/engine/wasmtimeengine/compiler"
)

// compilerPath is the binary to start as the compiler process: the running
// one, by /proc/self/exe, which names it even once its file was replaced or
// removed (an upgrade under a running controller); "" when there is none
// (the engine then compiles in process).
func compilerPath() string {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe"
	}
	if p, err := os.Executable(); err == nil {
		return p
	}
	return ""
}

// compileInChild compiles wasm in a compiler process, which is killed when
// ctx ends. It returns the module and its serialized bytes (for the disk
// cache).
func (e *Engine) compileInChild(ctx context.Context, wasm []byte) (*wasmtime.Module, []byte, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("compiling module: %w", err)
	}
	defer r.Close()
	cmd := exec.CommandContext(ctx, e.exe)
	cmd.Args = []string{compiler.Arg0}
	cmd.Env = append(withoutEnv(os.Environ(), compiler.Env), compiler.Env+"="+e.cc.Encode())
	cmd.ExtraFiles = []*os.File{w}
	diag := &headWriter{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = diag, diag
	// Killed at the end of ctx (SIGKILL: Cranelift does not look at
	// signals); the compiler starts nothing, so its pid is all there is.
	cmd.WaitDelay = time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("compiling module: %w", err)
	}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("compiling module: starting the compiler process %s: %w", e.exe, err)
	}
	e.spawns.Add(1)
	if e.onSpawn != nil {
		e.onSpawn(cmd.Process.Pid)
	}
	go func() {
		// Not closed: the compiler exits when stdin ends (Wait closes
		// it, and so does the kernel when this process dies).
		_ = compiler.WriteRequest(stdin, wasm)
	}()
	limit := e.cc.MemoryLimit
	if limit == 0 {
		limit = compiler.MaxInput * 8
	}
	type result struct {
		b   []byte
		err error
	}
	results := make(chan result, 1)
	go func() {
		b, err := compiler.ReadFrame(r, limit)
		_, _ = io.Copy(io.Discard, r) // until the compiler is gone
		results <- result{b, err}
	}()
	werr := cmd.Wait()
	res := <-results // the compiler, the only writer, is gone
	if ctx.Err() != nil {
		return nil, nil, fmt.Errorf("compiling module: %w", ctx.Err())
	}
	st := cmd.ProcessState
	if st == nil {
		return nil, nil, fmt.Errorf("compiling module: compiler process: %w", werr)
	}
	switch st.ExitCode() {
	case 0:
		if res.err != nil {
			return nil, nil, fmt.Errorf("compiling module: reading the compiler's result: %v", res.err)
		}
		// Our own binary's output, trusted as the disk cache is.
		mod, err := wasmtime.NewModuleDeserialize(e.eng, res.b)
		if err != nil {
			return nil, nil, fmt.Errorf("compiling module: the compiler process's result does not load: %v", err)
		}
		return mod, res.b, nil
	case compiler.ExitInvalid:
		msg := strings.TrimSpace(string(res.b))
		if memoryExhausted(msg) && e.cc.MemoryLimit > 0 {
			return nil, nil, e.errMemory()
		}
		return nil, nil, fmt.Errorf("%w: not a valid WebAssembly module: %s", engine.ErrInvalidModule, msg)
	case compiler.ExitUsage:
		return nil, nil, fmt.Errorf("compiling module: compiler process: %s", strings.TrimSpace(string(res.b)))
	case compiler.ExitParentGone: // its stdin ended: not while we wait
		return nil, nil, fmt.Errorf("compiling module: the compiler process lost its input (%v)", st)
	}
	ws, _ := st.Sys().(syscall.WaitStatus)
	out := diag.String()
	switch {
	case e.cc.MemoryLimit > 0 && (memoryExhausted(out) || ws.Signaled() && ws.Signal() == syscall.SIGABRT && out == ""):
		return nil, nil, e.errMemory()
	case ws.Signaled() && ws.Signal() == syscall.SIGKILL:
		// Not by us (ctx is alive): the kernel's OOM killer, an operator.
		return nil, nil, fmt.Errorf("compiling module: the compiler process was killed (%v)", st)
	}
	return nil, nil, fmt.Errorf("%w: the compiler process failed on the module (%v): %s", engine.ErrInvalidModule, st, firstLines(out, 3))
}

func (e *Engine) errMemory() error {
	return fmt.Errorf("%w: compiling the module exceeded %d MiB", engine.ErrInvalidModule, e.cc.MemoryLimit>>20)
}

// memoryExhausted tells a failure to allocate: Rust's abort message, Go's
// fatal error, an mmap's errno, a thread that could not get its stack.
func memoryExhausted(s string) bool {
	s = strings.ToLower(s)
	for _, p := range []string{"memory allocation of", "out of memory", "cannot allocate memory", "os error 12",
		"resource temporarily unavailable"} { // a thread's stack, under RLIMIT_DATA
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " / ")
}

func withoutEnv(env []string, key string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// headWriter keeps the first max bytes written to it (where a fatal
// error's message is; a goroutine dump follows).
type headWriter struct {
	max int
	buf bytes.Buffer
}

func (h *headWriter) Write(p []byte) (int, error) {
	if room := h.max - h.buf.Len(); room > 0 {
		h.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (h *headWriter) String() string { return h.buf.String() }
