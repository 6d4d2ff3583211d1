package wazeroengine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/internal/testing/testwasm"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
)

// TestRealTimeCompileHonoursDeadline: a compile whose context expires stops within
// about one function's compile and returns the context's error, not an
// invalid module; the same module compiles with time to spare.
func TestRealTimeCompileHonoursDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a large module")
	}
	wasm := testwasm.BigModule(2000, 400)
	e, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer e.Close(ctx)
	cfg := engine.ModuleConfig{MemoryLimitPages: 16, HostFunctions: hostmodule.Functions()}

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
			m, err := e.Compile(ctx, wasm, engine.ModuleConfig{MemoryLimitPages: 4096, Interruptible: interruptible, HostFunctions: hostmodule.Functions()})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s interruptible=%v: %v", filepath.Base(path), interruptible, time.Since(start))
			m.Close(ctx)
			e.Close(ctx)
		}
	}
}
