package registry_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/internal/testing/testlog"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/registry"
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
	mu    sync.Mutex
	all   []registry.Event
	woken notifier   // pinged at every event, log record and load call
	clock *testClock // the registry's, if fake
}

func newEvents() *events { return &events{woken: newNotifier()} }

func (e *events) handle(ev registry.Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
	e.woken.ping()
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

// wait waits (until) for an event after index from that matches,
// returning its index.
func (e *events) wait(t testing.TB, from int, match func(registry.Event) bool) (int, registry.Event) {
	t.Helper()
	var i int
	var ev registry.Event
	e.until(t, "a matching event", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for i = from; i < len(e.all); i++ {
			if match(e.all[i]) {
				ev = e.all[i]
				return true
			}
		}
		return false
	})
	return i, ev
}

func (e *events) len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.all)
}

// recheck is how often until checks its condition unwoken: for what no
// event, log record or call reports (a call in flight, a pool's
// instances).
const recheck = 10 * time.Millisecond

// until waits until cond holds, bounded by deadlineCtx: it checks cond again
// at every registry event and log record (the fixture's logger), every
// call of a load (startLoad), and every recheck. On the fixture's fake
// clock, each time the registry arms a timer (a debounce) until steps the
// clock to it: what a file change sets off happens without waiting for
// the debounce.
func (e *events) until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := deadlineCtx(t)
	defer cancel()
	var armed <-chan struct{}
	if e.clock != nil {
		armed = e.clock.armed
	}
	tick := time.NewTicker(recheck)
	defer tick.Stop()
	for !cond() {
		select {
		case <-e.woken:
		case <-armed:
			e.clock.stepToArmed()
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("%v waiting for %s", context.Cause(ctx), what)
		}
	}
}

// notifier wakes a goroutine waiting for a condition; a ping while nobody
// waits is kept, so a change between a check and the wait is not missed.
type notifier chan struct{}

func newNotifier() notifier { return make(notifier, 1) }

func (n notifier) ping() {
	select {
	case n <- struct{}{}:
	default:
	}
}

// pingWriter writes to w and pings n: a log record written is a change a
// waiting test looks at.
type pingWriter struct {
	w io.Writer
	n notifier
}

func (p pingWriter) Write(b []byte) (int, error) {
	defer p.n.ping()
	return p.w.Write(b)
}

// deadlineCtx ends a little before the test's deadline (go test -timeout;
// never without one), so that what is not over by then fails the test
// with its own message rather than the binary's timeout panic. A busy
// machine may exceed any fixed time; the test's deadline is the bound.
func deadlineCtx(t testing.TB) (context.Context, context.CancelFunc) {
	if tt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := tt.Deadline(); ok {
			return context.WithDeadline(context.Background(), d.Add(-min(time.Until(d)/10, 30*time.Second)))
		}
	}
	return context.WithCancel(context.Background())
}

// untilDeadline is the time deadlineCtx leaves, for an API that takes a
// duration (a day without a deadline).
func untilDeadline(t testing.TB) time.Duration {
	ctx, cancel := deadlineCtx(t)
	defer cancel()
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return 24 * time.Hour
}

// testCtx is deadlineCtx, ended with the test too.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := deadlineCtx(t)
	stop := context.AfterFunc(t.Context(), cancel)
	t.Cleanup(func() { stop(); cancel() })
	return ctx
}

// testClock is the registry's clock in the fixture (WithClock): a fake
// clock that tells the test when the registry arms a timer (AfterFunc, or
// Reset of one: a debounce), and how far to step to fire it. The tickers
// (image and directory polls) it does not report: a test steps their
// interval itself.
type testClock struct {
	*clocktesting.FakeClock
	done   chan struct{} // closed when the test ends: AfterFunc's goroutines return
	armed  notifier
	mu     sync.Mutex
	target time.Time // the latest time a timer was armed for
}

func newTestClock() *testClock {
	return &testClock{FakeClock: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), armed: newNotifier(),
		done: make(chan struct{})}
}

// AfterFunc runs f, in a goroutine of its own, each time the timer fires.
// It is not the fake clock's AfterFunc: that one's timer also has a
// one-slot channel nobody reads, so reset after firing once, its second
// firing blocked Step forever with the clock's lock held (a debounce reset
// after it fired: TestHotReloadUnderLoad hung under wasmtime). Here the
// goroutine drains the timer's channel; it ends with the test.
func (c *testClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	go func() {
		for {
			select {
			case <-t.C():
				f()
			case <-c.done:
				return
			}
		}
	}()
	c.note(d)
	return armedTimer{t, c}
}

// armedTimer reports its Reset to its clock.
type armedTimer struct {
	clock.Timer
	c *testClock
}

func (t armedTimer) Reset(d time.Duration) bool {
	active := t.Timer.Reset(d)
	t.c.note(d)
	return active
}

func (c *testClock) note(d time.Duration) {
	c.mu.Lock()
	if at := c.Now().Add(d); at.After(c.target) {
		c.target = at
	}
	c.mu.Unlock()
	c.armed.ping()
}

// stepToArmed moves the clock to the latest time a timer was armed for,
// firing it and every timer due before it.
func (c *testClock) stepToArmed() {
	c.mu.Lock()
	target := c.target
	c.mu.Unlock()
	if d := target.Sub(c.Now()); d > 0 {
		c.Step(d)
	}
}

type fixture struct {
	rt    *runtime.Runtime
	reg   *registry.Registry
	ev    *events
	logs  *testlog.Buffer
	clock *testClock // the registry's timers'
}

// newFixture is a registry on a fake clock (testClock): a test steps it,
// or waits with until, which fires the debounces.
func newFixture(t testing.TB, ropts ...registry.Option) *fixture {
	t.Helper()
	logs := &testlog.Buffer{}
	ev := newEvents()
	ev.clock = newTestClock()
	logger := slog.New(slog.NewTextHandler(pingWriter{logs, ev.woken}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	rt := testhost.NewRuntime(t, runtime.WithLogger(logger))
	opts := append([]registry.Option{registry.WithLogger(logger), registry.WithEventHandler(ev.handle),
		registry.WithDebounce(30 * time.Millisecond), registry.WithClock(ev.clock)}, ropts...)
	reg := registry.New(rt, opts...)
	t.Cleanup(func() {
		cctx, cancel := deadlineCtx(t)
		defer cancel()
		if err := reg.Close(cctx); err != nil {
			t.Errorf("closing registry: %v", err)
		}
		close(ev.clock.done)
		// testhost closes rt again after this; closing twice is harmless.
		if err := rt.Close(cctx); err != nil {
			t.Errorf("closing runtime: %v", err)
		}
	})
	return &fixture{rt: rt, reg: reg, ev: ev, logs: logs, clock: ev.clock}
}

// waitFor waits (until) for cond.
func (f *fixture) waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	f.ev.until(t, what, cond)
}

func testMachine(labels map[string]string) *clusterv1alpha1.Machine {
	return &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "kube-system", UID: "uid-1", Labels: labels}}
}

// version calls the provider and returns the version that answered,
// checking that the answer is self-consistent.
func version(ctx context.Context, h *registry.Handle, labels map[string]string) (string, error) {
	out, err := h.MachineMetricsLabels(ctx, testMachine(labels), nil)
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

// writeInPlace truncates path and copies b into it in chunks, as cp does:
// a read between two chunks sees a half-written file (on the fake clock,
// a debounce that fires between them).
func writeInPlace(t testing.TB, path string, b []byte, chunks int) {
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
	f.waitFor(t, name+" serving "+sha[:12], func() bool {
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
	ev              *events  // woken at every call
}

func (f *fixture) startLoad(t testing.TB, h *registry.Handle, n int) *load {
	l := &load{ev: f.ev}
	t.Cleanup(l.halt)
	for range n {
		l.wg.Go(func() {
			for !l.stop.Load() {
				v, err := version(context.Background(), h, nil)
				l.calls.Add(1)
				if err != nil {
					l.failures.Add(1)
					l.firstErr.CompareAndSwap(nil, err)
				} else {
					l.seen.Store(v, true)
				}
				l.ev.woken.ping()
			}
		})
	}
	return l
}

// waitCalls waits until the load has made n calls more than it had.
func (l *load) waitCalls(t testing.TB, n int64) {
	t.Helper()
	want := l.calls.Load() + n
	l.ev.until(t, fmt.Sprintf("%d calls", want), func() bool { return l.calls.Load() >= want })
}

// waitSaw waits until a call was answered by version v.
func (l *load) waitSaw(t testing.TB, v string) {
	t.Helper()
	l.ev.until(t, "a call answered by "+v, func() bool { return l.saw(v) })
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
