package wazeroengine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmprov/wasmprov/internal/hostfuncs"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/interrupt"
)

// TestInstrumentedModuleCache: with a cache directory the instrumented
// module is written once and reused; a damaged file is a miss, never a
// module that fails to load.
func TestInstrumentedModuleCache(t *testing.T) {
	wasm, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "abi", "minimal.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := interrupt.InstrumentWith(wasm, interrupt.FlagBudget)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer e.Close(ctx)
	compile := func() {
		t.Helper()
		m, err := e.Compile(ctx, wasm, engine.ModuleConfig{MemoryLimitPages: 16, Interruptible: true, HostFunctions: hostfuncs.Functions()})
		if err != nil {
			t.Fatal(err)
		}
		m.Close(ctx)
	}
	compile()
	files, _ := filepath.Glob(filepath.Join(dir, "wasmprov-instrumented-v*", "*.wasm"))
	if len(files) != 1 {
		t.Fatalf("cache files %v, want one", files)
	}
	got, ok := readCached(files[0])
	if !ok || !bytes.Equal(got, want) {
		t.Fatal("the cached module is not the instrumented module")
	}
	// Damage it: the next compile must miss, succeed and rewrite it.
	raw, _ := os.ReadFile(files[0])
	raw[len(raw)-1] ^= 0xff
	if err := os.WriteFile(files[0], raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := readCached(files[0]); ok {
		t.Fatal("a damaged cache file was accepted")
	}
	compile()
	if got, ok := readCached(files[0]); !ok || !bytes.Equal(got, want) {
		t.Fatal("the damaged cache file was not rewritten")
	}
}
