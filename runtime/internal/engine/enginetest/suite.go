package enginetest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// getOutput is what minimal.wasm's and loop.wasm's wasmprov_get pass to
// the output host function.
const getOutput = `{"name":"wat","id":"1","providerID":"wat://1","status":"running"}`

// recorder is a wasmprov_v1 "output" host function that keeps what the
// guest passes it.
type recorder struct {
	mu  sync.Mutex
	got [][]byte
}

func (r *recorder) functions() []hostmodule.Function {
	return []hostmodule.Function{{
		Module: abi.ModuleName, Name: abi.ImportOutput, Params: []engine.ValueType{hostmodule.I32, hostmodule.I32}, Results: []engine.ValueType{hostmodule.I32},
		Fn: func(_ context.Context, mem hostmodule.Memory, stack []uint64) {
			b, ok := mem.Read(uint32(stack[0]), uint32(stack[1]))
			r.mu.Lock()
			if ok {
				r.got = append(r.got, bytes.Clone(b))
			}
			r.mu.Unlock()
			stack[0] = 0
		},
	}}
}

func config(interruptible bool, r *recorder) engine.ModuleConfig {
	return engine.ModuleConfig{MemoryLimitPages: 16, Interruptible: interruptible, HostFunctions: r.functions()}
}

// each runs f as a subtest, for a plain and an interruptible module.
func each(t *testing.T, f func(t *testing.T, interruptible bool)) {
	for _, interruptible := range []bool{false, true} {
		name := "plain"
		if interruptible {
			name = "interruptible"
		}
		t.Run(name, func(t *testing.T) { f(t, interruptible) })
	}
}

// RunCompile: a module compiles and reports its own exports and imports
// (not the instrumentation's); bytes that are no module are an error
// wrapping engine.ErrInvalidModule, worded as the runtime reports it.
func RunCompile(t *testing.T, newEngine NewEngine) {
	each(t, func(t *testing.T, interruptible bool) {
		ctx := context.Background()
		e := newEngine(t, "")
		m, err := e.Compile(ctx, Fixture(t, "minimal.wasm"), config(interruptible, &recorder{}))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close(ctx)
		i32, i64 := []engine.ValueType{wasmbin.ValueTypeI32}, []engine.ValueType{wasmbin.ValueTypeI64}
		exports := m.ExportedFunctions()
		for name, want := range map[string]engine.Signature{
			"wasmprov_abi_version":  {Results: i32},
			"wasmprov_capabilities": {Results: i64},
			"wasmprov_get":          {Results: i32},
		} {
			got, ok := exports[name]
			if !ok || !slices.Equal(got.Params, want.Params) || !slices.Equal(got.Results, want.Results) {
				t.Errorf("export %s: %v (present %v), want %v", name, got, ok, want)
			}
		}
		if len(exports) != 10 {
			t.Errorf("%d function exports, want minimal.wasm's 10: %v", len(exports), exports)
		}
		if mems := m.ExportedMemories(); !slices.Equal(mems, []string{"memory"}) {
			t.Errorf("memory exports %v, want [memory]", mems)
		}
		imports := m.ImportedFunctions()
		if len(imports) != 1 || imports[0].Module != abi.ModuleName || imports[0].Name != abi.ImportOutput ||
			!slices.Equal(imports[0].Params, append(i32, i32...)) || !slices.Equal(imports[0].Results, i32) {
			t.Errorf("function imports %v, want only %s.%s (i32 i32) -> i32", imports, abi.ModuleName, abi.ImportOutput)
		}

		for name, wasm := range map[string][]byte{
			"not wasm":      []byte("#!/bin/sh\necho I am not WebAssembly\n"),
			"empty":         nil,
			"truncated":     []byte("\x00asm\x01\x00\x00\x00garbage"),
			"not validated": {0, 'a', 's', 'm', 1, 0, 0, 0, 10, 4, 1, 2, 0, 0x1a}, // code with no function
		} {
			m, err := e.Compile(ctx, wasm, config(interruptible, &recorder{}))
			if err == nil {
				m.Close(ctx)
				t.Errorf("%s: compiled", name)
				continue
			}
			const prefix = "invalid provider module: not a valid WebAssembly module: "
			if !errors.Is(err, engine.ErrInvalidModule) || !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("%s: %v, want an error wrapping ErrInvalidModule starting %q", name, err, prefix)
			}
		}

		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := e.Compile(cctx, Fixture(t, "minimal.wasm"), config(interruptible, &recorder{})); !errors.Is(err, context.Canceled) {
			t.Errorf("compile with a cancelled context: %v, want context.Canceled", err)
		}
	})
}

// instantiate compiles and instantiates fixture, closing both when t ends.
func instantiate(t *testing.T, e engine.Engine, fixture string, interruptible bool, r *recorder) (engine.Module, engine.Instance) {
	t.Helper()
	ctx := context.Background()
	m, err := e.Compile(ctx, Fixture(t, fixture), config(interruptible, r))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(ctx) })
	inst, err := m.Instantiate(ctx, engine.InstanceConfig{Env: []string{"GOGC=50"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close(ctx) })
	return m, inst
}

// RunInstantiate: instances of one module are independent, find their
// exports (and nothing else) and report whether they can be interrupted.
func RunInstantiate(t *testing.T, newEngine NewEngine) {
	each(t, func(t *testing.T, interruptible bool) {
		ctx := context.Background()
		r := &recorder{}
		m, a := instantiate(t, newEngine(t, ""), "minimal.wasm", interruptible, r)
		b, err := m.Instantiate(ctx, engine.InstanceConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for _, inst := range []engine.Instance{a, b} {
			if inst.Interruptible() != interruptible {
				t.Errorf("Interruptible() = %v, want %v", inst.Interruptible(), interruptible)
			}
			if inst.Function("wasmprov_get") == nil {
				t.Error("no wasmprov_get")
			}
			if inst.Function("no_such_export") != nil || inst.Function("memory") != nil {
				t.Error("a function for a name that is not a function export")
			}
		}
		if err := b.Close(ctx); err != nil {
			t.Fatal(err)
		}
		// a works on after b was closed.
		stack := make([]uint64, 1)
		if err := a.Function("wasmprov_get").Call(ctx, stack); err != nil || stack[0] != 0 {
			t.Fatalf("call after closing another instance: %d, %v", stack[0], err)
		}
		if len(r.got) != 1 {
			t.Fatalf("%d output calls, want 1", len(r.got))
		}
	})
}

// RunCall: calls return their results on the stack, and host functions see
// the guest's memory.
func RunCall(t *testing.T, newEngine NewEngine) {
	each(t, func(t *testing.T, interruptible bool) {
		ctx := context.Background()
		r := &recorder{}
		_, inst := instantiate(t, newEngine(t, ""), "minimal.wasm", interruptible, r)
		stack := make([]uint64, 1)
		if err := inst.Function("wasmprov_abi_version").Call(ctx, stack); err != nil || stack[0] != 1 {
			t.Fatalf("wasmprov_abi_version: %d, %v; want 1", stack[0], err)
		}
		for range 2 {
			stack[0] = 42
			if err := inst.Function("wasmprov_get").Call(ctx, stack); err != nil || stack[0] != 0 {
				t.Fatalf("wasmprov_get: %d, %v; want 0", stack[0], err)
			}
		}
		if len(r.got) != 2 || string(r.got[0]) != getOutput || string(r.got[1]) != getOutput {
			t.Fatalf("output got %q, want %q twice", r.got, getOutput)
		}
	})
}

// RunInterrupt: a call looping with no host call runs until Interrupt,
// which stops it with an error within a second.
func RunInterrupt(t *testing.T, newEngine NewEngine) {
	ctx := context.Background()
	_, inst := instantiate(t, newEngine(t, ""), "loop.wasm", true, &recorder{})
	f := inst.Function("wasmprov_validate")
	done := make(chan error, 1)
	go func() { done <- f.Call(ctx, make([]uint64, 1)) }()
	select {
	case err := <-done:
		t.Fatalf("the loop returned before any interrupt: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	start := time.Now()
	inst.Interrupt()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the interrupted call returned no error")
		}
		var exit *engine.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("the interrupted call reported an exit: %v", err)
		}
		t.Logf("interrupted after %v: %v", time.Since(start), err)
	case <-time.After(time.Second):
		t.Fatal("the loop ran on for a second after Interrupt")
	}
}
