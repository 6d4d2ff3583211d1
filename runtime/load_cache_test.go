package runtime_test

import (
	"context"
	"errors"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/cloud"
	"github.com/wasmprov/wasmprov/runtime"
)

// TestPrecheckVerdictFollowsLimits: a warm compilation cache skips the
// precheck only for the limits the module was checked against. A module
// loaded (and cached) under MaxTableEntries 2000 is checked again under
// 1000 — its table capped at 1000, not at the 2000 of the cached copy — and
// a module refused under 1000 is refused again after it passed under 2000.
// Each load is a new runtime on one cache directory, as a new process is.
func TestPrecheckVerdictFollowsLimits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	load := func(wasm []byte, maxEntries uint32) (*runtime.Provider, error) {
		rt := newRuntime(t, runtime.WithCompilationCacheDir(dir))
		p, err := rt.LoadBytes(ctx, "tables", wasm, runtime.WithPolicy(runtime.Policy{MaxTableEntries: maxEntries}))
		if err == nil {
			t.Cleanup(func() { p.Close(ctx) })
		}
		return p, err
	}
	// Get: table.grow(ref.null, 1000) on a table of 1 entry with no
	// maximum: status 1 (an error, ClassTransient) if it grew, 0 (no
	// instance: ClassBadResult) if it answered -1.
	body := []byte{0xd0, 0x70, opI32Const}
	body = append(body, sleb(1000)...)
	body = append(body, 0xfc, 15, 0, opI32Const, 0x7f, 0x47)
	gm := providerModule(0, map[string][]byte{abi.MethodGet.Export(): body})
	gm.extra = map[byte][]byte{4: vec([]byte{0x70, 0x00, 0x01})}
	grow := gm.bytes()
	m := newMachine("m", "u", map[string]any{})
	for _, c := range []struct {
		maxEntries uint32
		want       runtime.Class
	}{
		{2000, runtime.ClassTransient}, // grew to 1001
		{2000, runtime.ClassTransient}, // from the cache
		{1000, runtime.ClassBadResult}, // rechecked: capped at 1000
		{1000, runtime.ClassBadResult},
		{2000, runtime.ClassTransient},
	} {
		p, err := load(grow, c.maxEntries)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cloud.SeedProvider(p, nil).Get(m); runtime.ErrorClass(err) != c.want {
			t.Fatalf("MaxTableEntries %d: Get = %v, want class %v", c.maxEntries, err, c.want)
		}
	}

	// A table of 1500 entries: refused under 1000, loaded under 2000.
	tm := providerModule(0, nil)
	tm.extra = map[byte][]byte{4: vec(append([]byte{0x70, 0x00}, uleb(1500)...))}
	big := tm.bytes()
	for _, c := range []struct {
		maxEntries uint32
		refused    bool
	}{{1000, true}, {2000, false}, {2000, false}, {1000, true}} {
		_, err := load(big, c.maxEntries)
		if refused := errors.Is(err, runtime.ErrInvalidModule); refused != c.refused || (err != nil && !refused) {
			t.Fatalf("a table of 1500 under MaxTableEntries %d: %v", c.maxEntries, err)
		}
	}
}
