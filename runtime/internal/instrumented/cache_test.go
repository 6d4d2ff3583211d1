package instrumented

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/wasmprov/wasmprov/runtime/internal/cachefile"
	"github.com/wasmprov/wasmprov/runtime/internal/interrupt"
)

func fixture(t *testing.T) []byte {
	t.Helper()
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "abi", "minimal.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

func wantStats(t *testing.T, c *Cache, hits, misses int64) {
	t.Helper()
	if h, m := c.Stats(); h != hits || m != misses {
		t.Fatalf("Stats() = %d hits, %d misses; want %d, %d", h, m, hits, misses)
	}
}

// TestInstrumentedModuleCache: with a directory the instrumented module is
// written once and reused, by the same cache and by another one (another
// process) on the same directory, with the digest of what it returns; a
// damaged, short or unreadable file is a miss that is rewritten, never a
// module that fails to load. (Moved from wazeroengine, where the cache
// was the engine's own.)
func TestInstrumentedModuleCache(t *testing.T) {
	wasm := fixture(t)
	for _, f := range []interrupt.Flag{interrupt.FlagBudget, interrupt.FlagMemory} {
		want, err := interrupt.InstrumentWith(wasm, f)
		if err != nil {
			t.Fatal(err)
		}
		wantSum := sha256.Sum256(want)
		dir := t.TempDir()
		c := NewCache(dir)
		check := func(hits, misses int64) {
			t.Helper()
			out, sum, err := c.Module(wasm, f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, want) || sum != wantSum {
				t.Fatalf("flag %d: Module returned another module or digest than the instrumenter's", f)
			}
			wantStats(t, c, hits, misses)
		}
		check(0, 1)
		check(1, 1)
		path := c.Path(Key{Module: sha256.Sum256(wasm), Flag: f, Format: interrupt.FormatVersion})
		files, _ := filepath.Glob(filepath.Join(dir, "wasmprov-instrumented-v*", "*", "*.wasm"))
		if len(files) != 1 || files[0] != path {
			t.Fatalf("cache files %v, want only %s", files, path)
		}
		if got, _, ok := cachefile.ReadVerified(path); !ok || !bytes.Equal(got, want) {
			t.Fatal("the cached file is not the instrumented module")
		}
		// Another cache on the directory, as another process would have.
		c = NewCache(dir)
		check(1, 0)

		raw, _ := os.ReadFile(path)
		damages := []struct {
			name  string
			apply func() error
		}{
			{"a flipped byte", func() error {
				b := bytes.Clone(raw)
				b[len(b)-1] ^= 0xff
				return os.WriteFile(path, b, 0o644)
			}},
			{"a short file", func() error { return os.WriteFile(path, raw[:10], 0o644) }},
			{"an empty file", func() error { return os.WriteFile(path, nil, 0o644) }},
			{"a directory in its place", func() error {
				if err := os.Remove(path); err != nil {
					return err
				}
				return os.Mkdir(path, 0o755)
			}},
		}
		misses := int64(0)
		for _, d := range damages {
			if err := d.apply(); err != nil {
				t.Fatal(err)
			}
			misses++
			check(1, misses) // a miss, still the right module
			if d.name == "a directory in its place" {
				os.Remove(path) // cannot be rewritten: the next call is a miss again
				check(1, misses+1)
				misses++
			}
			if got, _, ok := cachefile.ReadVerified(path); !ok || !bytes.Equal(got, want) {
				t.Fatalf("after %s: the file was not rewritten", d.name)
			}
		}
		check(2, misses)
	}
}

// TestCacheKeys: the flag and the module are part of the key; another
// module or flag is a miss.
func TestCacheKeys(t *testing.T) {
	wasm := fixture(t)
	c := NewCache(t.TempDir())
	for _, f := range []interrupt.Flag{interrupt.FlagBudget, interrupt.FlagMemory} {
		if _, _, err := c.Module(wasm, f); err != nil {
			t.Fatal(err)
		}
	}
	wantStats(t, c, 0, 2)
	budget, _, _ := c.Module(wasm, interrupt.FlagBudget)
	memory, _, _ := c.Module(wasm, interrupt.FlagMemory)
	wantStats(t, c, 2, 2)
	if bytes.Equal(budget, memory) {
		t.Fatal("both flags returned the same module")
	}
	if p, q := c.Path(Key{Flag: interrupt.FlagBudget}), c.Path(Key{Flag: interrupt.FlagMemory}); p == q {
		t.Fatalf("both flags map to %s", p)
	}
	if p, q := c.Path(Key{Format: 1}), c.Path(Key{Format: 2}); p == q {
		t.Fatalf("both formats map to %s", p)
	}
}

// TestCacheWithoutDirectory: "" keeps nothing; every call instruments.
func TestCacheWithoutDirectory(t *testing.T) {
	wasm := fixture(t)
	want, err := interrupt.InstrumentWith(wasm, interrupt.FlagBudget)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCache("")
	for i := int64(1); i <= 2; i++ {
		out, sum, err := c.Module(wasm, interrupt.FlagBudget)
		if err != nil || !bytes.Equal(out, want) || sum != sha256.Sum256(want) {
			t.Fatalf("Module: %v, or not the instrumenter's module and digest", err)
		}
		wantStats(t, c, 0, i)
	}
	if p := c.Path(Key{}); p != "" {
		t.Fatalf("Path = %q, want \"\"", p)
	}
}

// TestCacheInvalidModule: the instrumenter's error, and nothing cached.
func TestCacheInvalidModule(t *testing.T) {
	dir := t.TempDir()
	c := NewCache(dir)
	if _, _, err := c.Module([]byte("\x00asm\x01\x00\x00\x00garbage"), interrupt.FlagBudget); err == nil {
		t.Fatal("instrumented a module that does not decode")
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*", "*", "*")); len(files) != 0 {
		t.Fatalf("files written for an invalid module: %v", files)
	}
}

// TestCacheConcurrentWriters: caches of several processes (here, several
// caches) missing at once all get the module, and the file they race to
// write is whole, with no temporary file left.
func TestCacheConcurrentWriters(t *testing.T) {
	wasm := fixture(t)
	want, err := interrupt.InstrumentWith(wasm, interrupt.FlagBudget)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, _, err := NewCache(dir).Module(wasm, interrupt.FlagBudget)
			if err == nil && !bytes.Equal(out, want) {
				err = os.ErrInvalid
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a concurrent caller: %v", err)
		}
	}
	path := NewCache(dir).Path(Key{Module: sha256.Sum256(wasm), Flag: interrupt.FlagBudget, Format: interrupt.FormatVersion})
	if got, _, ok := cachefile.ReadVerified(path); !ok || !bytes.Equal(got, want) {
		t.Fatal("the file the callers raced to write is not the module")
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tmp*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
