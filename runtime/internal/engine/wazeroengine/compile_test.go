package wazeroengine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/hostfuncs"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
)

// bigModule is a valid module of n functions of about k instructions
// each, which takes wazero seconds to compile: (func (param i32) (result
// i32)) adding constants to its parameter, with a memory export.
func bigModule(n, k int) []byte {
	uleb := func(v int) []byte {
		var b []byte
		for {
			c := byte(v & 0x7f)
			v >>= 7
			if v != 0 {
				c |= 0x80
			}
			b = append(b, c)
			if v == 0 {
				return b
			}
		}
	}
	section := func(id byte, payload []byte) []byte {
		return append(append([]byte{id}, uleb(len(payload))...), payload...)
	}
	var body []byte
	body = append(body, 0x00) // no locals
	for j := 0; j < k; j++ {
		// local.get 0; i32.const j; i32.add; local.set 0 — with a branch
		// now and then, so the compiler has blocks to work on.
		body = append(body, 0x20, 0x00, 0x41)
		body = append(body, uleb(j&0x3f)...)
		body = append(body, 0x6a, 0x21, 0x00)
		if j%16 == 0 {
			body = append(body, 0x20, 0x00, 0x04, 0x40, 0x20, 0x00, 0x41, 0x01, 0x6b, 0x21, 0x00, 0x0b) // if: local0--
		}
	}
	body = append(body, 0x20, 0x00, 0x0b)
	code := uleb(n)
	funcs := uleb(n)
	for j := 0; j < n; j++ {
		code = append(code, uleb(len(body))...)
		code = append(code, body...)
		funcs = append(funcs, 0x00)
	}
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	out = append(out, section(1, []byte{0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f})...)
	out = append(out, section(3, funcs)...)
	out = append(out, section(5, []byte{0x01, 0x00, 0x01})...)
	out = append(out, section(7, []byte{0x01, 0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00})...)
	out = append(out, section(10, code)...)
	return out
}

// TestCompileHonoursDeadline: a compile whose context expires stops within
// about one function's compile and returns the context's error, not an
// invalid module; the same module compiles with time to spare.
func TestCompileHonoursDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a large module")
	}
	wasm := bigModule(2000, 400)
	e, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer e.Close(ctx)
	cfg := engine.ModuleConfig{MemoryLimitPages: 16, HostFunctions: hostfuncs.Functions()}

	start := time.Now()
	m, err := e.Compile(ctx, wasm, cfg)
	if err != nil {
		t.Fatal(err)
	}
	full := time.Since(start)
	m.Close(ctx)
	if full < time.Second {
		t.Logf("the module compiled in %v only; the deadline check is weak", full)
	}

	e2, err := New("") // a cold cache
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close(ctx)
	deadline := full / 10
	dctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	start = time.Now()
	_, err = e2.Compile(dctx, wasm, cfg)
	elapsed := time.Since(start)
	t.Logf("full compile %v; with a %v deadline: %v after %v", full, deadline, err, elapsed)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("compile with an expired deadline: %v, want context.DeadlineExceeded", err)
	}
	if errors.Is(err, engine.ErrInvalidModule) {
		t.Fatalf("a cancelled compile reported an invalid module: %v", err)
	}
	if elapsed > full/2 {
		t.Errorf("the cancelled compile took %v of the full %v", elapsed, full)
	}
}

// TestColdCompileTime reports the cold compile time of a big guest
// ($WASMPROV_COMPILE_GUEST, e.g. build/guests/hetzner.wasm).
func TestColdCompileTime(t *testing.T) {
	path := os.Getenv("WASMPROV_COMPILE_GUEST")
	if path == "" {
		t.Skip("WASMPROV_COMPILE_GUEST not set")
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, interruptible := range []bool{false, true} {
		for k := 0; k < 3; k++ {
			e, err := New("")
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			start := time.Now()
			m, err := e.Compile(ctx, wasm, engine.ModuleConfig{MemoryLimitPages: 4096, Interruptible: interruptible, HostFunctions: hostfuncs.Functions()})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s interruptible=%v: %v", filepath.Base(path), interruptible, time.Since(start))
			m.Close(ctx)
			e.Close(ctx)
		}
	}
}
