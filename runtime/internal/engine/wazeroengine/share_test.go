package wazeroengine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
)

// Compiling the same bytes with the same configuration twice shares one
// wazero runtime and compiled module (so wazero's decoded module, several
// MiB for a Go guest, is held once); another memory limit or other host
// functions (another slice of them, even with the same functions) do not
// share. The module lives until its last Close: an
// instance of the second still runs after the first is closed.
func TestCompileSharesIdenticalModules(t *testing.T) {
	ctx := context.Background()
	wasm, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "abi", "minimal.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	cfg := engine.ModuleConfig{MemoryLimitPages: 16, Interruptible: true, HostFunctions: hostmodule.Functions()}
	compile := func(cfg engine.ModuleConfig) *module {
		t.Helper()
		m, err := e.Compile(ctx, wasm, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return m.(*module)
	}
	a, b := compile(cfg), compile(cfg)
	if a.sh != b.sh || a.sh.refs != 2 {
		t.Fatalf("identical compiles not shared (refs %d)", a.sh.refs)
	}
	bigger := cfg
	bigger.MemoryLimitPages = 32
	fewer := cfg
	fewer.HostFunctions = cfg.HostFunctions[1:]
	plain := cfg
	plain.Interruptible = false
	// The same functions in a slice of the caller's own: closures that may
	// hold other state, so never taken for the runtime's.
	copied := cfg
	copied.HostFunctions = slices.Clone(cfg.HostFunctions)
	for _, m := range []*module{compile(bigger), compile(fewer), compile(plain), compile(copied)} {
		if m.sh == a.sh {
			t.Fatal("a compile with another configuration shares the module")
		}
		if err := m.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(ctx); err != nil { // a second Close releases nothing more
		t.Fatal(err)
	}
	inst, err := b.Instantiate(ctx, engine.InstanceConfig{})
	if err != nil {
		t.Fatalf("instantiating the module still open: %v", err)
	}
	stack := make([]uint64, 1)
	if err := inst.Function(abi.ExportABIVersion).Call(ctx, stack); err != nil || int32(stack[0]) != abi.Version {
		t.Fatalf("%s = %d, %v", abi.ExportABIVersion, int32(stack[0]), err)
	}
	if err := inst.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.shared) != 0 {
		t.Fatalf("%d modules still held after every Close", len(e.shared))
	}
}
