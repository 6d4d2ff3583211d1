package registry_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/runtime/registry"
)

// TestWatchFollowsDirectory: a new file is loaded, an atomic rename and a
// copy in place are both picked up, a policy change reloads, a removal
// unloads (after the call in flight), and the name comes back with its
// handle.
func TestWatchFollowsDirectory(t *testing.T) {
	ctx := context.Background()
	v1, v2 := guest(t, "v1", ""), guest(t, "v2", "")
	f, dir := watchedFixture(t)
	path := filepath.Join(dir, "w.wasm")

	writeAtomic(t, path, v1)
	waitServing(t, f, "w", sum(v1))
	h, _ := f.reg.Get("w")

	writeInPlace(t, path, v2, 8)
	waitServing(t, f, "w", sum(v2))
	if v, err := version(ctx, h, nil); err != nil || v != "v2" {
		t.Fatalf("after copy in place: %q, %v", v, err)
	}

	writeAtomic(t, path, v1)
	waitServing(t, f, "w", sum(v1))

	// A policy change alone is a new version. (Not told by the next
	// EventReloaded: the one of the rename above may still be on its way
	// once the new digest serves, and both carry the same digest.)
	if err := os.WriteFile(filepath.Join(dir, "w.yaml"), []byte("poolSize: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, "the policy change served", func() bool { return h.Current().Policy().PoolSize == 2 })

	// Removal waits for the call in flight.
	slow := make(chan error, 1)
	go func() {
		_, err := version(ctx, h, map[string]string{"spin": "15"})
		slow <- err
	}()
	cur := h.Current()
	f.waitFor(t, "slow call", func() bool { inUse := cur.PoolStats().InUse; return inUse == 1 })
	mark := f.ev.len()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	f.ev.wait(t, mark, func(e registry.Event) bool { return e.Kind == registry.EventUnloaded })
	if _, err := f.reg.Get("w"); !errors.Is(err, registry.ErrProviderNotFound) {
		t.Fatalf("Get after removal = %v", err)
	}
	if err := <-slow; err != nil {
		t.Fatalf("call in flight during removal failed: %v", err)
	}
	f.ev.wait(t, mark, func(e registry.Event) bool { return e.Kind == registry.EventDrained && e.SHA256 == sum(v1) })

	// It comes back; the old handle works again.
	writeAtomic(t, path, v2)
	waitServing(t, f, "w", sum(v2))
	if v, err := version(ctx, h, nil); err != nil || v != "v2" {
		t.Fatalf("old handle after the file came back: %q, %v", v, err)
	}
}

// TestWatchBurst: a file replaced 50 times within a second (of the
// registry's fake clock: 19ms between writes, a debounce of 100ms), in
// place and by rename, ends on the last version, loads far fewer times
// than it was written, and never stops serving.
func TestWatchBurst(t *testing.T) {
	ctx := context.Background()
	v1, v2 := guest(t, "v1", ""), guest(t, "v2", "")
	f, dir := watchedFixture(t, registry.WithDebounce(100*time.Millisecond))
	path := filepath.Join(dir, "b.wasm")
	writeAtomic(t, path, v1)
	waitServing(t, f, "b", sum(v1))
	h, _ := f.reg.Get("b")
	stop := make(chan struct{})
	var calls, failures atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := version(ctx, h, nil); err != nil {
				failures.Add(1)
				t.Errorf("call failed: %v", err)
			}
			calls.Add(1)
		}
	}()
	mark := f.ev.len()
	start := f.clock.Now()
	for i := range 50 {
		b := v1
		if i%2 == 1 {
			b = v2 // the last write (i == 49) is v2
		}
		if i%3 == 0 {
			writeInPlace(t, path, b, 4)
		} else {
			writeAtomic(t, path, b)
		}
		f.clock.Step(19 * time.Millisecond)
	}
	burst := f.clock.Since(start)
	waitServing(t, f, "b", sum(v2))
	// No load can follow: a debounce fires only when the clock is stepped,
	// and one that fires reads v2 again (a load holds the name's lock
	// from its read to its swap).
	close(stop)
	wg.Wait()
	if h.SHA256() != sum(v2) {
		t.Fatalf("ended on %s, want v2", h.SHA256())
	}
	loads := f.ev.count(registry.EventReloaded) + f.ev.count(registry.EventRejected)
	t.Logf("50 writes in %s: %d load attempts after the first load (%d events since the burst), %d calls, %d failed",
		burst.Round(time.Millisecond), loads, f.ev.len()-mark, calls.Load(), failures.Load())
	if loads > 10 {
		t.Fatalf("%d load attempts for a burst of 50 writes: debounce is not working", loads)
	}
	if calls.Load() == 0 {
		t.Fatal("no calls made")
	}
}

// TestWatchDirectoryDisappears: removing the whole directory unloads
// nothing; when it comes back it is rescanned.
func TestWatchDirectoryDisappears(t *testing.T) {
	ctx := context.Background()
	v1, v2 := guest(t, "v1", ""), guest(t, "v2", "")
	const dirPoll = time.Minute
	f := newFixture(t, registry.WithDirPollInterval(dirPoll))
	parent := t.TempDir()
	dir := filepath.Join(parent, "providers")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "d.wasm"), v1, 0o644)
	if err := f.reg.LoadDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	h, _ := f.reg.Get("d")
	mark := f.ev.len()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	_, ev := f.ev.wait(t, mark, func(e registry.Event) bool { return e.Kind == registry.EventWatchError })
	if !strings.Contains(ev.Err.Error(), "disappeared") {
		t.Fatalf("watch error %v", ev.Err)
	}
	// The debounced removal of d.wasm fires (the wait steps the clock to
	// it) and finds the directory gone.
	f.waitFor(t, "the removal of d.wasm handled", func() bool {
		return strings.Contains(f.logs.String(), "provider directory is unavailable") || f.ev.count(registry.EventUnloaded) != 0
	})
	if f.ev.count(registry.EventUnloaded) != 0 {
		t.Fatal("a vanished directory unloaded its providers")
	}
	if v, err := version(ctx, h, nil); err != nil || v != "v1" {
		t.Fatalf("while the directory is gone: %q, %v", v, err)
	}
	if !strings.Contains(f.logs.String(), "provider directory disappeared; providers keep serving their last good version") {
		t.Fatalf("no clear log line:\n%s", f.logs.String())
	}
	// Back, with a new version: picked up by the rescan.
	tmp := filepath.Join(parent, "staging")
	os.Mkdir(tmp, 0o755)
	os.WriteFile(filepath.Join(tmp, "d.wasm"), v2, 0o644)
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(dirPoll) // the poll finds it
	waitServing(t, f, "d", sum(v2))
	// And it is watched again.
	writeAtomic(t, filepath.Join(dir, "d.wasm"), v1)
	waitServing(t, f, "d", sum(v1))
}

// TestLoadDirAfterWatchIsWatched: a directory given to LoadDir after Watch
// started is watched like the first: a new file in it is loaded, a changed
// one reloaded.
func TestLoadDirAfterWatchIsWatched(t *testing.T) {
	ctx := context.Background()
	v1, v2 := guest(t, "v1", ""), guest(t, "v2", "")
	f, _ := watchedFixture(t)
	second := t.TempDir()
	if err := os.WriteFile(filepath.Join(second, "late.wasm"), v1, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.LoadDir(ctx, second); err != nil {
		t.Fatal(err)
	}
	waitServing(t, f, "late", sum(v1))
	h, _ := f.reg.Get("late")

	writeAtomic(t, filepath.Join(second, "late.wasm"), v2)
	waitServing(t, f, "late", sum(v2))
	if v, err := version(ctx, h, nil); err != nil || v != "v2" {
		t.Fatalf("after the change in the second directory: %q, %v; want v2", v, err)
	}

	writeAtomic(t, filepath.Join(second, "new.wasm"), v1)
	waitServing(t, f, "new", sum(v1))

}
