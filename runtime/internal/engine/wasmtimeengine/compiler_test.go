//go:build wasmtime && linux

package wasmtimeengine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v37"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/engine/wasmtimeengine/compiler"
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// chainModule is n functions of about size bytes each, every one a chain of
// local.get a; local.get b; i32.add; local.set c over locals i32 locals
// (16 of them parameters, so nothing folds to a constant) whose sum it
// returns (so no assignment is dead). It stays within the host's
// structural limits (package precheck) and takes Cranelift very long: one
// function of 200 KB over 1,000 locals took 16 s (13.6 s of CPU) and
// 840 MiB at OptLevelSpeed on the 2-core test VM, 0.7 s at OptLevelNone.
// Set WASMPROV_TEST_PATHOLOGICAL=1 to measure it again in process.
func chainModule(n, size, locals int) []byte {
	uleb := func(b []byte, v int) []byte { return wasmbin.AppendUint64(b, uint64(v)) }
	section := func(id byte, payload []byte) []byte {
		return append(uleb([]byte{id}, len(payload)), payload...)
	}
	const params = 16
	body := uleb(uleb(nil, 1), locals-params)
	body = append(body, 0x7f)
	x := uint32(1)
	next := func() int { // xorshift: the same module every time
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		return int(x % uint32(locals))
	}
	for len(body) < size-3*locals {
		body = append(body, 0x20)
		body = uleb(body, next())
		body = append(body, 0x20)
		body = uleb(body, next())
		body = append(body, 0x6a, 0x21)
		body = uleb(body, next())
	}
	body = append(body, 0x20, 0x00)
	for j := 1; j < locals; j++ {
		body = append(body, 0x20)
		body = uleb(body, j)
		body = append(body, 0x6a)
	}
	body = append(body, 0x0b)
	code, funcs := uleb(nil, n), uleb(nil, n)
	for j := 0; j < n; j++ {
		code = uleb(code, len(body))
		code = append(code, body...)
		funcs = append(funcs, 0x00)
	}
	ty := append([]byte{0x01, 0x60, params}, bytes.Repeat([]byte{0x7f}, params)...)
	ty = append(ty, 0x01, 0x7f)
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	out = append(out, section(1, ty)...)
	out = append(out, section(3, funcs)...)
	out = append(out, section(10, code)...)
	return out
}

// pathological is the module of chainModule the tests use: one function
// of 200 KB.
func pathological() []byte { return chainModule(1, 200_000, 1000) }

func cpuTimes() (self, children time.Duration) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return self, children
}

func processExists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// waitGone waits up to d for process pid to be gone (reaped: not even a
// zombie) and returns how long that took.
func waitGone(t *testing.T, pid int, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for processExists(pid) {
		if time.Since(start) > d {
			t.Fatalf("compiler process %d still exists %v later", pid, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

func spawnRecorder(e *Engine) chan int {
	pids := make(chan int, 16)
	e.onSpawn = func(pid int) { pids <- pid }
	return pids
}

// TestPathologicalModuleTakesLong checks, on request, that the module the
// deadline test kills really takes Cranelift long.
func TestPathologicalModuleTakesLong(t *testing.T) {
	if os.Getenv("WASMPROV_TEST_PATHOLOGICAL") == "" {
		t.Skip("set WASMPROV_TEST_PATHOLOGICAL=1 to spend ~15 s of CPU on this")
	}
	wasm := pathological()
	e, err := New("", WithInProcessCompile())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	self0, _ := cpuTimes()
	start := time.Now()
	m, err := e.Compile(context.Background(), wasm, engine.ModuleConfig{})
	elapsed := time.Since(start)
	self1, _ := cpuTimes()
	if err != nil {
		t.Fatal(err)
	}
	m.Close(context.Background())
	t.Logf("%d bytes of wasm: compiled in process in %v, %v of CPU", len(wasm), elapsed, self1-self0)
	if elapsed < 10*time.Second {
		t.Errorf("compiled in %v, want a module that takes more than 10 s", elapsed)
	}
}

// TestRealTimeCompilerKilledAtDeadline: a module that takes Cranelift many seconds
// is compiled with a 2 s deadline; Compile returns the deadline's error in
// time, and the compiler process is gone right after: nothing burns a core
// or memory for a load that failed.
func TestRealTimeCompilerKilledAtDeadline(t *testing.T) {
	wasm := pathological()
	e, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	pids := spawnRecorder(e)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, children0 := cpuTimes()
	start := time.Now()
	_, err = e.Compile(ctx, wasm, engine.ModuleConfig{})
	returned := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, engine.ErrInvalidModule) {
		t.Fatalf("Compile: %v, want an error wrapping context.DeadlineExceeded", err)
	}
	if returned > 2300*time.Millisecond {
		t.Errorf("Compile returned %v after the start, for a 2 s deadline", returned)
	}
	var pid int
	select {
	case pid = <-pids:
	default:
		t.Fatal("no compiler process was started")
	}
	gone := waitGone(t, pid, time.Second)
	waitBuilds(t, e)

	// The compiler's CPU (counted once it is reaped) stops with it, and
	// this process uses next to none once the compile is given up.
	self1, children1 := cpuTimes()
	time.Sleep(time.Second)
	self2, children2 := cpuTimes()
	t.Logf("Compile returned after %v; the compiler process (%d) was gone %v later, having used %v of CPU; this process used %v of CPU in the next second",
		returned, pid, gone, children1-children0, self2-self1)
	if d := self2 - self1; d > 250*time.Millisecond {
		t.Errorf("this process used %v of CPU in the second after the compile was given up", d)
	}
	if d := children2 - children1; d != 0 {
		t.Errorf("child processes used %v of CPU after the compiler was gone", d)
	}
	if n := e.live.Load(); n != 0 {
		t.Errorf("%d modules alive, want 0", n)
	}
	e.mu.Lock()
	n := len(e.modules)
	e.mu.Unlock()
	if n != 0 {
		t.Errorf("%d modules in the engine's table, want 0", n)
	}
}

// TestCloseKillsCompiler: closing the engine stops a compile no deadline
// bounds.
func TestCloseKillsCompiler(t *testing.T) {
	e, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	pids := spawnRecorder(e)
	errs := make(chan error, 1)
	go func() {
		_, err := e.Compile(context.Background(), pathological(), engine.ModuleConfig{})
		errs <- err
	}()
	pid := <-pids
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	e.Close(context.Background())
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("Compile: %v, want context.Canceled", err)
	}
	if processExists(pid) {
		t.Errorf("compiler process %d exists after Close", pid)
	}
	t.Logf("Close took %v", time.Since(start))
}

// TestCompilerMemoryLimit: a compile that needs more memory than the limit
// fails with a clear ErrInvalidModule, and the engine goes on compiling.
func TestCompilerMemoryLimit(t *testing.T) {
	ctx := context.Background()
	e, err := New("", WithCompileMemoryLimit(256<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	start := time.Now()
	_, err = e.Compile(ctx, pathological(), engine.ModuleConfig{}) // ≈ 840 MiB
	if !errors.Is(err, engine.ErrInvalidModule) || !strings.Contains(err.Error(), "compiling the module exceeded 256 MiB") {
		t.Fatalf("Compile: %v, want ErrInvalidModule: compiling the module exceeded 256 MiB", err)
	}
	t.Logf("%v after %v", err, time.Since(start))
	m, err := e.Compile(ctx, watModule(t), engine.ModuleConfig{})
	if err != nil {
		t.Fatalf("a small module after the failure: %v", err)
	}
	m.Close(ctx)
}

func watModule(t *testing.T) []byte {
	t.Helper()
	wasm, err := wasmtime.Wat2Wasm(`(module
		(memory (export "memory") 1)
		(func (export "answer") (result i32)
			(local i32)
			(loop (local.set 0 (i32.add (local.get 0) (i32.const 1)))
				(br_if 0 (i32.lt_u (local.get 0) (i32.const 1000))))
			(i32.sub (local.get 0) (i32.const 958))))`)
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// TestCompilerProcess: a module compiled by the compiler process runs as
// one compiled in process, interruptible or not; the in-memory and disk
// caches start no process, and a disk-cache hit is as fast as before.
func TestCompilerProcess(t *testing.T) {
	ctx := context.Background()
	wasm := watModule(t)
	dir := t.TempDir()
	call := func(t *testing.T, m engine.Module, interruptible bool) uint64 {
		t.Helper()
		inst, err := m.Instantiate(ctx, engine.InstanceConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer inst.Close(ctx)
		if inst.Interruptible() != interruptible {
			t.Errorf("instance interruptible: %v, want %v", inst.Interruptible(), interruptible)
		}
		var stack [1]uint64
		if err := inst.Function("answer").Call(ctx, stack[:]); err != nil {
			t.Fatal(err)
		}
		return stack[0]
	}
	for _, interruptible := range []bool{false, true} {
		cfg := engine.ModuleConfig{MemoryLimitPages: 16, Interruptible: interruptible}
		e, err := New(dir)
		if err != nil {
			t.Fatal(err)
		}
		if e.exe == "" {
			t.Fatal("no compiler process on Linux")
		}
		m, err := e.Compile(ctx, wasm, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := call(t, m, interruptible); got != 42 {
			t.Errorf("answer() = %d, want 42", got)
		}
		if n := e.spawns.Load(); n != 1 {
			t.Errorf("%d compiler processes, want 1", n)
		}
		m2, err := e.Compile(ctx, wasm, cfg) // in memory
		if err != nil {
			t.Fatal(err)
		}
		if n := e.spawns.Load(); n != 1 {
			t.Errorf("%d compiler processes after an in-memory hit, want 1", n)
		}
		if mems := m2.ExportedMemories(); len(mems) != 1 || mems[0] != "memory" {
			t.Errorf("exported memories %v, want [memory]", mems)
		}
		m.Close(ctx)
		m2.Close(ctx)
		e.Close(ctx)

		// A new engine (process) loads it from disk, starting nothing.
		for _, opts := range [][]Option{nil, {WithInProcessCompile()}} {
			e, err := New(dir, opts...)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			m, err := e.Compile(ctx, wasm, cfg)
			warm := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if got := call(t, m, interruptible); got != 42 {
				t.Errorf("answer() = %d from the disk cache, want 42", got)
			}
			if n := e.spawns.Load(); n != 0 {
				t.Errorf("%d compiler processes for a disk-cache hit, want 0", n)
			}
			t.Logf("interruptible=%v, in process=%v: disk-cache hit in %v", interruptible, e.exe == "", warm)
			m.Close(ctx)
			e.Close(ctx)
		}
	}
}

// TestInProcessFallback: without a compiler process, modules compile as
// before.
func TestInProcessFallback(t *testing.T) {
	ctx := context.Background()
	e, err := New("", WithInProcessCompile())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	m, err := e.Compile(ctx, watModule(t), engine.ModuleConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if n := e.spawns.Load(); n != 0 {
		t.Errorf("%d compiler processes, want 0", n)
	}
	if _, ok := m.ExportedFunctions()["answer"]; !ok {
		t.Error("export answer missing")
	}
}

// startCompiler starts a compiler process as the engine does, with the
// result's pipe.
func startCompiler(t *testing.T, setting string, stdin io.Reader) (*exec.Cmd, io.WriteCloser, *os.File) {
	t.Helper()
	cmd := exec.Command(compilerPath())
	cmd.Args = []string{compiler.Arg0}
	cmd.Env = append(os.Environ(), compiler.Env+"="+setting)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	cmd.ExtraFiles = []*os.File{w}
	var in io.WriteCloser
	if stdin != nil {
		cmd.Stdin = stdin
	} else if in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return cmd, in, r
}

// TestCompilerExitsWithoutParent: the compiler process stops compiling as
// soon as its stdin ends — which the kernel does when the engine's process
// dies.
func TestCompilerExitsWithoutParent(t *testing.T) {
	cmd, stdin, _ := startCompiler(t, compiler.Config{OptLevel: wasmtime.OptLevelSpeed}.Encode(), nil)
	if err := compiler.WriteRequest(stdin, pathological()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // compiling
	start := time.Now()
	stdin.Close()
	err := cmd.Wait()
	t.Logf("compiler exited %v after its stdin closed: %v", time.Since(start), err)
	if code := cmd.ProcessState.ExitCode(); code != compiler.ExitParentGone {
		t.Fatalf("compiler exited with %v, want exit status %d", cmd.ProcessState, compiler.ExitParentGone)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("compiler took %v to exit", d)
	}
}

// TestCompilerRefusesBadInput: a compiler process started with a setting
// it does not know, or fed garbage, fails with a message, not a crash.
func TestCompilerRefusesBadInput(t *testing.T) {
	for _, c := range []struct{ setting, stdin string }{
		{"v0 opt=0 mem=0", ""},
		{compiler.Config{}.Encode(), "not a header at all"},
	} {
		cmd, _, r := startCompiler(t, c.setting, strings.NewReader(c.stdin))
		msg, rerr := compiler.ReadFrame(r, 1<<20)
		cmd.Wait()
		if cmd.ProcessState.ExitCode() != compiler.ExitUsage || rerr != nil || len(msg) == 0 {
			t.Errorf("%q: %v, message %q (%v)", c.setting, cmd.ProcessState, msg, rerr)
		}
		t.Logf("%q: %s", c.setting, msg)
	}
}

func TestCompileConfigRoundTrip(t *testing.T) {
	for _, c := range []compiler.Config{
		{OptLevel: wasmtime.OptLevelSpeed, MemoryLimit: DefaultCompileMemoryLimit},
		{OptLevel: wasmtime.OptLevelNone},
	} {
		got, err := compiler.Decode(c.Encode())
		if err != nil || got != c {
			t.Errorf("%q decodes to %+v, %v; want %+v", c.Encode(), got, err, c)
		}
	}
	for _, s := range []string{"", "v2 opt=0 mem=0", "v1 opt=0", "v1 opt=0 mem=-1", "v1 opt=0 mem=0 x=1", "v1 opt=0 opt=1 mem=0"} {
		if _, err := compiler.Decode(s); err == nil {
			t.Errorf("%q decoded", s)
		}
	}
}

// TestCompilerOverhead measures, on request, a cold compile in a compiler
// process against one in process: WASMPROV_TEST_COMPILE_OVERHEAD is the
// module's path (build/guests/hetzner.wasm after make guests), or "small"
// for a tiny module, which shows the cost of starting the process
// (WASMPROV_TEST_COMPILE_OPT=none: at OptLevelNone).
func TestCompilerOverhead(t *testing.T) {
	path := os.Getenv("WASMPROV_TEST_COMPILE_OVERHEAD")
	if path == "" {
		t.Skip("set WASMPROV_TEST_COMPILE_OVERHEAD to a module's path, or to small")
	}
	wasm, rounds := watModule(t), 20
	if path != "small" {
		var err error
		if wasm, err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
		rounds = 3
	}
	if n, err := strconv.Atoi(os.Getenv("WASMPROV_TEST_COMPILE_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	ctx := context.Background()
	var total [2]time.Duration
	for r := 0; r < rounds; r++ {
		for k, opts := range [][]Option{nil, {WithInProcessCompile()}} {
			if os.Getenv("WASMPROV_TEST_COMPILE_OPT") == "none" {
				opts = append(opts, WithOptLevel(wasmtime.OptLevelNone))
			}
			e, err := New("", opts...)
			if err != nil {
				t.Fatal(err)
			}
			var ru0, ru1, rc0, rc1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &rc0)
			start := time.Now()
			m, err := e.Compile(ctx, wasm, engine.ModuleConfig{})
			wall := time.Since(start)
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &rc1)
			d := func(a, b syscall.Timeval) time.Duration {
				return time.Duration(b.Nano() - a.Nano()).Round(time.Millisecond)
			}
			if err != nil {
				t.Fatal(err)
			}
			total[k] += wall
			if path != "small" {
				t.Logf("compiler process=%v: %v; CPU here %v user %v sys, in children %v user %v sys",
					k == 0, wall.Round(time.Millisecond), d(ru0.Utime, ru1.Utime), d(ru0.Stime, ru1.Stime), d(rc0.Utime, rc1.Utime), d(rc0.Stime, rc1.Stime))
			}
			m.Close(ctx)
			e.Close(ctx)
		}
	}
	t.Logf("mean over %d rounds: compiler process %v, in process %v", rounds, total[0]/time.Duration(rounds), total[1]/time.Duration(rounds))
}
