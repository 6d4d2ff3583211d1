//go:build wasmtime

package wasmtimeengine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v37"
	"github.com/wasmprov/wasmprov/internal/testing/testwasm"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
)

// waitBuilds waits for the compiles running in the background.
func waitBuilds(t *testing.T, e *Engine) {
	t.Helper()
	done := make(chan struct{})
	go func() { e.builds.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("a background compile did not finish")
	}
}

// TestRealTimeCompileGivesUpAtDeadline: Compile returns the context's error at its
// deadline; the compile is then stopped (its compiler process killed) or,
// in process, where wasmtime cannot cancel it, finishes and its module,
// compiled for no one, is released. A caller still waiting for the same
// module gets it.
func TestRealTimeCompileGivesUpAtDeadline(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts []Option
	}{{"compiler process", nil}, {"in process", []Option{WithInProcessCompile()}}} {
		t.Run(mode.name, func(t *testing.T) { testCompileGivesUpAtDeadline(t, mode.opts...) })
	}
}

func testCompileGivesUpAtDeadline(t *testing.T, opts ...Option) {
	wasm := testwasm.BigModule(600, 400)
	ctx := context.Background()
	cfg := engine.ModuleConfig{MemoryLimitPages: 16}

	e, err := New("", opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)

	// Alone: give up, and nothing is left once the compile is over.
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	start := time.Now()
	_, err = e.Compile(dctx, wasm, cfg)
	elapsed := time.Since(start)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, engine.ErrInvalidModule) {
		t.Fatalf("compile past its deadline: %v, want context.DeadlineExceeded", err)
	}
	if elapsed > 500*time.Millisecond {
		t.Errorf("Compile returned %v after the start, for a 50ms deadline", elapsed)
	}
	waitBuilds(t, e)
	full := time.Since(start)
	t.Logf("gave up after %v; the compile was over after %v", elapsed, full)
	if n := e.live.Load(); n != 0 {
		t.Errorf("%d modules alive after the abandoned compile, want 0", n)
	}
	e.mu.Lock()
	n := len(e.modules)
	e.mu.Unlock()
	if n != 0 {
		t.Errorf("%d modules in the engine's table, want 0", n)
	}

	// Two callers of one module: one gives up, the other gets it.
	e2, err := New("", opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close(ctx)
	var wg sync.WaitGroup
	var patient engine.Module
	var patientErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		patient, patientErr = e2.Compile(ctx, wasm, cfg)
	}()
	for {
		// The patient caller first (else the impatient one could be
		// alone, and its compile stopped).
		e2.mu.Lock()
		n := len(e2.modules)
		e2.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	dctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = e2.Compile(dctx, wasm, cfg)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("impatient compile: %v, want context.DeadlineExceeded", err)
	}
	wg.Wait()
	if patientErr != nil {
		t.Fatal(patientErr)
	}
	if n := e2.live.Load(); n != 1 {
		t.Errorf("%d modules alive, want 1", n)
	}
	if _, ok := patient.ExportedFunctions()[""]; ok {
		t.Fatal("unexpected export")
	}
	patient.Close(ctx)
	if n := e2.live.Load(); n != 0 {
		t.Errorf("%d modules alive after Close, want 0", n)
	}

	// An expired context compiles nothing.
	dctx, cancel = context.WithCancel(ctx)
	cancel()
	if _, err := e2.Compile(dctx, wasm, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("compile with a cancelled context: %v", err)
	}
}

// TestFeatures: the proposals wazero v1.12.0 enables by default are
// accepted, multi-memory too (the interrupt flag's memory); threads, tail
// calls, relaxed SIMD, memory64 and typed function references are refused.
func TestFeatures(t *testing.T) {
	ctx := context.Background()
	e, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	cases := []struct {
		name, wat     string
		interruptible bool
		valid         bool
	}{
		{"SIMD", `(module (memory (export "memory") 1) (func (export "f") (result v128) (v128.const i32x4 1 2 3 4)))`, false, true},
		{"bulk memory", `(module (memory 1) (func (memory.fill (i32.const 0) (i32.const 0) (i32.const 8))))`, false, true},
		{"reference types", `(module (table 1 externref) (func (param externref) (table.set (i32.const 0) (local.get 0))))`, false, true},
		{"multi-value", `(module (func (result i32 i32) (i32.const 1) (i32.const 2)))`, false, true},
		{"sign extension", `(module (func (param i32) (result i32) (i32.extend8_s (local.get 0))))`, false, true},
		{"non-trapping conversions", `(module (func (param f32) (result i32) (i32.trunc_sat_f32_s (local.get 0))))`, false, true},
		{"multi-memory (interrupt flag)", `(module (memory (export "memory") 1) (func (export "f") (loop (br 0))))`, true, true},
		{"threads", `(module (memory 1 1 shared) (func (result i32) (memory.atomic.wait32 (i32.const 0) (i32.const 0) (i64.const -1))))`, false, false},
		{"shared memory", `(module (memory 1 1 shared))`, false, false},
		{"tail calls", `(module (func $f (return_call $f)))`, false, false},
		{"relaxed SIMD", `(module (func (result v128) (i32x4.relaxed_trunc_f32x4_s (v128.const i32x4 0 0 0 0))))`, false, false},
		{"memory64", `(module (memory i64 1))`, false, false},
		{"typed function references", `(module (type $t (func)) (func (param (ref $t))))`, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wasm, err := wasmtime.Wat2Wasm(c.wat)
			if err != nil {
				t.Fatal(err)
			}
			m, err := e.Compile(ctx, wasm, engine.ModuleConfig{MemoryLimitPages: 16, Interruptible: c.interruptible})
			switch {
			case c.valid && err != nil:
				t.Fatalf("refused: %v", err)
			case !c.valid && err == nil:
				m.Close(ctx)
				t.Fatal("accepted")
			case !c.valid && !errors.Is(err, engine.ErrInvalidModule):
				t.Fatalf("refused with %v, want ErrInvalidModule", err)
			case err == nil:
				m.Close(ctx)
			}
		})
	}
}
