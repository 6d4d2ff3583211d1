package runtime_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/metadata"
)

// compiledFiles counts the engine's compiled modules in a compilation
// cache directory: every file but the runtime's own (the instrumented
// modules, one per module as shipped, and the inspect results).
func compiledFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() && strings.HasPrefix(rel, "wasmprov-") { // our instrumented modules and inspect results, not compiled code
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Modules that differ only in their metadata (one provider build annotated
// with many names) are compiled once: the instrumented bytes the engine
// compiles are identical, so the second load finds the first's code (in
// memory, and in the cache directory, which holds one compiled module for
// both). A module with other code is compiled on its own, which shows the
// count would see a second compilation.
func TestModulesDifferingInMetadataShareCompiledCode(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rt := testhost.NewRuntime(t, runtime.WithCompilationCacheDir(dir))
	load := func(name string, wasm []byte) {
		t.Helper()
		p, err := rt.LoadBytes(ctx, name, wasm)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close(ctx) })
	}
	minimal := readFixture(t, "minimal")
	for _, name := range []string{"provider-a", "provider-b"} {
		wasm, err := metadata.Write(minimal, &metadata.Metadata{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		load(name, wasm)
	}
	if n := compiledFiles(t, dir); n != 1 {
		t.Fatalf("%d compiled modules in the cache after two loads differing in metadata, want 1", n)
	}
	load("loop", readFixture(t, "loop"))
	if n := compiledFiles(t, dir); n != 2 {
		t.Fatalf("%d compiled modules after a module with other code, want 2", n)
	}
}
