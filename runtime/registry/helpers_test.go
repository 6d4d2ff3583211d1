package registry_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/testguest"
	"github.com/wasmprov/wasmprov/internal/testhost"
	"github.com/wasmprov/wasmprov/internal/testlog"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const versionedDir = "runtime/registry/testdata/versioned"

// guest builds the versioned test guest with the given version and mode
// and returns its bytes.
func guest(t testing.TB, version, mode string) []byte {
	t.Helper()
	flags := "-X main.Version=" + version
	if mode != "" {
		flags += " -X main.Mode=" + mode
	}
	b, err := os.ReadFile(testguest.BuildWith(t, versionedDir, flags))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// events collects registry events.
type events struct {
	mu  sync.Mutex
	all []registry.Event
	ch  chan struct{}
}

func newEvents() *events { return &events{ch: make(chan struct{}, 1)} }

func (e *events) handle(ev registry.Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
	select {
	case e.ch <- struct{}{}:
	default:
	}
}

func (e *events) count(kind registry.EventKind) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.all {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

// wait waits until an event after index from matches, returning its index.
func (e *events) wait(t testing.TB, from int, timeout time.Duration, match func(registry.Event) bool) (int, registry.Event) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		e.mu.Lock()
		for i := from; i < len(e.all); i++ {
			if match(e.all[i]) {
				ev := e.all[i]
				e.mu.Unlock()
				return i, ev
			}
		}
		e.mu.Unlock()
		select {
		case <-e.ch:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no matching event within %s", timeout)
		}
	}
}

func (e *events) len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.all)
}

type fixture struct {
	rt   *runtime.Runtime
	reg  *registry.Registry
	ev   *events
	logs *testlog.Buffer
}

func newFixture(t testing.TB, ropts ...registry.Option) *fixture {
	t.Helper()
	ctx := context.Background()
	logs := &testlog.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	rt := testhost.NewRuntime(t, runtime.WithLogger(logger))
	ev := newEvents()
	opts := append([]registry.Option{registry.WithLogger(logger), registry.WithEventHandler(ev.handle), registry.WithDebounce(30 * time.Millisecond)}, ropts...)
	reg := registry.New(rt, opts...)
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := reg.Close(cctx); err != nil {
			t.Errorf("closing registry: %v", err)
		}
		// testhost closes rt again after this; closing twice is harmless.
		if err := rt.Close(cctx); err != nil {
			t.Errorf("closing runtime: %v", err)
		}
	})
	return &fixture{rt: rt, reg: reg, ev: ev, logs: logs}
}

func testMachine(labels map[string]string) *clusterv1alpha1.Machine {
	return &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "kube-system", UID: "uid-1", Labels: labels}}
}

// version calls the provider and returns the version that answered,
// checking that the answer is self-consistent.
func version(ctx context.Context, h *registry.Handle, labels map[string]string) (string, error) {
	out, err := h.ContextProvider().MachineMetricsLabels(ctx, testMachine(labels))
	if err != nil {
		return "", err
	}
	v := out["version"]
	if v == "" || out["check"] != v+"/"+v {
		return "", fmt.Errorf("inconsistent answer %v", out)
	}
	return v, nil
}

// writeAtomic writes b to path the way deployment tools do: a temporary
// file in the same directory renamed over the target.
func writeAtomic(t testing.TB, path string, b []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// writeInPlace truncates path and copies b into it in chunks, with pauses,
// as cp does: readers can see a half-written file.
func writeInPlace(t testing.TB, path string, b []byte, chunks int, pause time.Duration) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	step := (len(b) + chunks - 1) / chunks
	for off := 0; off < len(b); off += step {
		end := min(off+step, len(b))
		if _, err := f.Write(b[off:end]); err != nil {
			t.Fatal(err)
		}
		if pause > 0 && end < len(b) {
			time.Sleep(pause)
		}
	}
}

func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func liveProviders(rt *runtime.Runtime) int { return len(rt.Providers()) }

// liveInstances counts the module instances of every open provider.
func liveInstances(rt *runtime.Runtime) int64 {
	var n int64
	for _, p := range rt.Providers() {
		n += p.PoolStats().Live
	}
	return n
}

func watchedFixture(t *testing.T, opts ...registry.Option) (*fixture, string) {
	t.Helper()
	f := newFixture(t, opts...)
	dir := t.TempDir()
	if err := f.reg.LoadDir(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.Watch(context.Background()); err != nil {
		t.Fatal(err)
	}
	return f, dir
}

func waitServing(t testing.TB, f *fixture, name, sha string) {
	t.Helper()
	waitFor(t, 20*time.Second, name+" serving "+sha[:12], func() bool {
		h, err := f.reg.Get(name)
		return err == nil && h.SHA256() == sha
	})
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// load is n goroutines calling h continuously (version) until halt, or
// until the test ends however it ends: a failed wait must not leave them
// calling until the package times out.
type load struct {
	stop            atomic.Bool
	wg              sync.WaitGroup
	calls, failures atomic.Int64
	firstErr        atomic.Value
	seen            sync.Map // version → true
}

func startLoad(t testing.TB, h *registry.Handle, n int) *load {
	l := &load{}
	t.Cleanup(l.halt)
	for range n {
		l.wg.Go(func() {
			for !l.stop.Load() {
				v, err := version(context.Background(), h, nil)
				l.calls.Add(1)
				if err != nil {
					l.failures.Add(1)
					l.firstErr.CompareAndSwap(nil, err)
					continue
				}
				l.seen.Store(v, true)
			}
		})
	}
	return l
}

// halt stops the callers and waits for them.
func (l *load) halt() {
	l.stop.Store(true)
	l.wg.Wait()
}

// saw reports whether some call was answered by version v.
func (l *load) saw(v string) bool { _, ok := l.seen.Load(v); return ok }

// noFailures fails t if any call failed.
func (l *load) noFailures(t testing.TB) {
	t.Helper()
	if n := l.failures.Load(); n != 0 {
		t.Fatalf("%d of %d calls failed across the swap; first: %v", n, l.calls.Load(), l.firstErr.Load())
	}
}
