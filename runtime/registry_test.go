package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/internal/testguest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const versionedDir = "runtime/testdata/versioned"

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

// logBuffer is a concurrency-safe log sink tests can search.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// events collects registry events.
type events struct {
	mu  sync.Mutex
	all []Event
	ch  chan struct{}
}

func newEvents() *events { return &events{ch: make(chan struct{}, 1)} }

func (e *events) handle(ev Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
	select {
	case e.ch <- struct{}{}:
	default:
	}
}

func (e *events) count(kind EventKind) int {
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
func (e *events) wait(t testing.TB, from int, timeout time.Duration, match func(Event) bool) (int, Event) {
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
	rt   *Runtime
	reg  *Registry
	ev   *events
	logs *logBuffer
}

func newFixture(t testing.TB, ropts ...RegistryOption) *fixture {
	t.Helper()
	ctx := context.Background()
	logs := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	rt, err := New(WithEngine(Engine(os.Getenv(EngineEnv))), WithLogger(logger), WithCompilationCacheDir(testguest.CompilationCacheDir(t)))
	if err != nil {
		t.Fatal(err)
	}
	ev := newEvents()
	opts := append([]RegistryOption{WithRegistryLogger(logger), WithEventHandler(ev.handle), WithDebounce(30 * time.Millisecond)}, ropts...)
	reg := NewRegistry(rt, opts...)
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := reg.Close(cctx); err != nil {
			t.Errorf("closing registry: %v", err)
		}
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
func version(ctx context.Context, h *Handle, labels map[string]string) (string, error) {
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

func TestRegistryLoadDirGetAndNotFound(t *testing.T) {
	ctx := context.Background()
	v1 := guest(t, "v1", "")
	f := newFixture(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "alpha.wasm"), v1, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alpha.yaml"), []byte("poolSize: 2\ncallTimeout: 30s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Not providers: a stray file, an invalid name, a lone policy.
	for name, b := range map[string][]byte{"README": []byte("x"), "Bad Name.wasm": v1, "lonely.yaml": []byte("poolSize: 1\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.reg.LoadDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if got := f.reg.Names(); len(got) != 1 || got[0] != "alpha" {
		t.Fatalf("Names() = %v, want [alpha]", got)
	}
	h, err := f.reg.Get("alpha")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := version(ctx, h, nil); err != nil || v != "v1" {
		t.Fatalf("version = %q, %v; want v1", v, err)
	}
	if p := h.Current().Policy(); p.PoolSize != 2 || time.Duration(p.CallTimeout) != 30*time.Second {
		t.Fatalf("policy file not applied: %+v", p)
	}
	if h.SHA256() != sum(v1) {
		t.Fatalf("SHA256 = %s, want %s", h.SHA256(), sum(v1))
	}
	// Both views are real providers.
	if _, err := h.Get(testMachine(nil)); err != nil {
		t.Fatal(err)
	}

	_, err = f.reg.Get("nope")
	if !errors.Is(err, ErrProviderNotFound) {
		t.Fatalf("Get(nope) = %v, want ErrProviderNotFound", err)
	}
	if errors.Is(err, cloudprovidererrors.ErrInstanceNotFound) {
		t.Fatal("a missing provider must not look like a missing instance")
	}
	if _, err := os.Stat(filepath.Join(dir, "alpha.wasm")); err != nil {
		t.Fatal(err)
	}
	st := f.reg.Status()
	if len(st) != 1 || !st[0].Serving || st[0].SHA256 != sum(v1) || st[0].PoolSize != 2 || st[0].ReloadsOK != 1 {
		t.Fatalf("Status() = %+v", st)
	}
}

func TestRegistryRegisterFromCode(t *testing.T) {
	ctx := context.Background()
	v1, v2 := guest(t, "v1", ""), guest(t, "v2", "")
	f := newFixture(t)
	if err := f.reg.Register(ctx, "code", v1, &Policy{PoolSize: 1}); err != nil {
		t.Fatal(err)
	}
	h, err := f.reg.Get("code")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := version(ctx, h, nil); err != nil || v != "v1" {
		t.Fatalf("version = %q, %v; want v1", v, err)
	}
	// Registering again is a hot swap; the old handle follows.
	if err := f.reg.Register(ctx, "code", v2, nil); err != nil {
		t.Fatal(err)
	}
	if v, err := version(ctx, h, nil); err != nil || v != "v2" {
		t.Fatalf("after Register(v2): version = %q, %v; want v2", v, err)
	}
	// From an fs.FS, with its policy file.
	fsys := fstest.MapFS{
		"viafs.wasm": {Data: v1},
		"viafs.yaml": {Data: []byte("poolSize: 3\n")},
	}
	if err := f.reg.RegisterFS(ctx, fsys, "viafs"); err != nil {
		t.Fatal(err)
	}
	hf, err := f.reg.Get("viafs")
	if err != nil {
		t.Fatal(err)
	}
	if hf.Current().Policy().PoolSize != 3 {
		t.Fatalf("fs policy not applied: %+v", hf.Current().Policy())
	}
	fsys["viafs.wasm"] = &fstest.MapFile{Data: v2}
	if err := f.reg.Reload(ctx, "viafs"); err != nil {
		t.Fatal(err)
	}
	if v, err := version(ctx, hf, nil); err != nil || v != "v2" {
		t.Fatalf("after Reload: version = %q, %v; want v2", v, err)
	}
	// A strict policy: a typo is an error, and the good version stays.
	fsys["viafs.yaml"] = &fstest.MapFile{Data: []byte("poolSzie: 3\n")}
	fsys["viafs.wasm"] = &fstest.MapFile{Data: v1}
	if err := f.reg.Reload(ctx, "viafs"); err == nil || !strings.Contains(err.Error(), "poolSzie") {
		t.Fatalf("Reload with a misspelt policy field = %v, want an error naming it", err)
	}
	if v, err := version(ctx, hf, nil); err != nil || v != "v2" {
		t.Fatalf("after a rejected reload: version = %q, %v; want v2", v, err)
	}
	// Unregister: calls fail with ErrProviderNotFound, and Get too.
	if err := f.reg.Unregister("code"); err != nil {
		t.Fatal(err)
	}
	if _, err := version(ctx, h, nil); !errors.Is(err, ErrProviderNotFound) {
		t.Fatalf("call after Unregister = %v, want ErrProviderNotFound", err)
	}
	if _, err := f.reg.Get("code"); !errors.Is(err, ErrProviderNotFound) {
		t.Fatalf("Get after Unregister = %v", err)
	}
}

func TestParsePolicyStrict(t *testing.T) {
	p, err := ParsePolicy([]byte(`
allowedHosts: ["api.example.com", "*.example.net"]
memoryLimitMiB: 64
poolSize: 2
callTimeout: 45s
capabilities: [log, http]
sha256: abc
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.AllowedHosts) != 2 || p.MemoryLimitMiB != 64 || p.PoolSize != 2 ||
		time.Duration(p.CallTimeout) != 45*time.Second || len(p.Capabilities) != 2 || p.SHA256 != "abc" {
		t.Fatalf("parsed %+v", p)
	}
	if p, err := ParsePolicy([]byte("# nothing set\n")); err != nil || p.PoolSize != 0 {
		t.Fatalf("empty policy file: %+v, %v", p, err)
	}
	for _, bad := range []string{
		"poolsize: 2\n",            // wrong case is an unknown field
		"callTimeout: 30\n",        // not a duration string
		"capabilities: [teleport]", // unknown capability
		"poolSize: -1\n",
		"poolSize: [\n",
		"poolSize: 1\npoolSize: 2\n", // duplicate key
	} {
		if _, err := ParsePolicy([]byte(bad)); err == nil {
			t.Errorf("ParsePolicy(%q) succeeded", bad)
		}
	}
}

// TestRegistryRejectsBadVersions: a corrupt module, the wrong ABI, a failed
// digest pin, a smoke call that panics and one that hangs are each
// rejected with a log line and an event, and the good version keeps
// serving.
func TestRegistryRejectsBadVersions(t *testing.T) {
	ctx := context.Background()
	v1 := guest(t, "v1", "")
	f := newFixture(t, WithSmokeTimeout(time.Second))
	dir := t.TempDir()
	path := filepath.Join(dir, "p.wasm")
	if err := os.WriteFile(path, v1, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.LoadDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	h, _ := f.reg.Get("p")
	emptyModule := []byte("\x00asm\x01\x00\x00\x00")
	cases := []struct {
		name    string
		wasm    []byte
		policy  string
		wantErr error
		wantLog string
	}{
		{"corrupt", []byte("\x00asm\x01\x00\x00\x00garbage"), "", ErrInvalidModule, "not a valid WebAssembly module"},
		{"half-written", v1[:len(v1)/2], "", ErrInvalidModule, "not a valid WebAssembly module"},
		{"wrong ABI", emptyModule, "", ErrInvalidModule, "missing export"},
		{"digest pin", guest(t, "v2", ""), "sha256: \"" + strings.Repeat("0", 64) + "\"\n", ErrInvalidModule, "does not match the pinned"},
		{"smoke panics", guest(t, "v3", "panic"), "", ErrSmokeTest, "guest panicked"},
		{"smoke hangs", guest(t, "v4", "hang"), "", ErrSmokeTest, "timed out"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mark := f.ev.len()
			if c.policy != "" {
				if err := os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(c.policy), 0o644); err != nil {
					t.Fatal(err)
				}
				defer os.Remove(filepath.Join(dir, "p.yaml"))
			}
			if c.name == "smoke hangs" {
				// Compile it once first (to the on-disk cache), so the time
				// measured below is the smoke call's, not a cold compile's.
				p, err := f.rt.LoadBytes(ctx, "warm", c.wasm)
				if err != nil {
					t.Fatal(err)
				}
				p.Close(ctx)
			}
			writeAtomic(t, path, c.wasm)
			start := time.Now()
			err := f.reg.Reload(ctx, "p")
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("Reload = %v, want %v", err, c.wantErr)
			}
			t.Logf("reload took %s", time.Since(start))
			if c.name == "smoke hangs" && time.Since(start) > 5*time.Second {
				t.Fatalf("a hanging smoke call held the reload for %s", time.Since(start))
			}
			_, ev := f.ev.wait(t, mark, time.Second, func(e Event) bool { return e.Kind == EventRejected })
			if ev.Provider != "p" || ev.SHA256 != sum(c.wasm) || ev.OldSHA256 != sum(v1) || !errors.Is(ev.Err, c.wantErr) {
				t.Fatalf("event %+v", ev)
			}
			if !strings.Contains(f.logs.String(), c.wantLog) || !strings.Contains(f.logs.String(), "previous version keeps serving") {
				t.Fatalf("log lacks %q:\n%s", c.wantLog, f.logs.String())
			}
			if v, err := version(ctx, h, nil); err != nil || v != "v1" {
				t.Fatalf("after rejecting: version = %q, %v; want v1", v, err)
			}
			// The same bad content again is not retried.
			if err := f.reg.Reload(ctx, "p"); !errors.Is(err, c.wantErr) {
				t.Fatalf("second Reload = %v", err)
			}
		})
	}
	if st := f.reg.Status()[0]; st.ReloadsFailed != int64(len(cases)) || st.SHA256 != sum(v1) || st.LastError == "" {
		t.Fatalf("status %+v", st)
	}
	// No rejected candidate is left open.
	waitFor(t, 5*time.Second, "rejected versions closed", func() bool { return liveProviders(f.rt) == 1 })
}

func liveProviders(rt *Runtime) int { return len(rt.Providers()) }

// liveInstances counts the module instances of every open provider.
func liveInstances(rt *Runtime) int64 {
	var n int64
	for _, p := range rt.Providers() {
		n += p.PoolStats().Live
	}
	return n
}

// TestRegistryDrainsOldVersion: a call running when the swap happens
// finishes on the old version; the old version is then closed.
func TestRegistryDrainsOldVersion(t *testing.T) {
	ctx := context.Background()
	v1, v2 := guest(t, "v1", ""), guest(t, "v2", "")
	f := newFixture(t)
	if err := f.reg.Register(ctx, "p", v1, nil); err != nil {
		t.Fatal(err)
	}
	h, _ := f.reg.Get("p")
	old := h.Current()
	type result struct {
		v   string
		err error
	}
	slow := make(chan result, 1)
	go func() {
		v, err := version(ctx, h, map[string]string{"spin": "15"})
		slow <- result{v, err}
	}()
	waitFor(t, 5*time.Second, "slow call in flight", func() bool { inUse := old.PoolStats().InUse; return inUse == 1 })
	if err := f.reg.Register(ctx, "p", v2, nil); err != nil {
		t.Fatal(err)
	}
	if v, err := version(ctx, h, nil); err != nil || v != "v2" {
		t.Fatalf("new call: %q, %v; want v2", v, err)
	}
	select {
	case r := <-slow:
		t.Logf("slow call finished before the drain could be observed (%v)", r)
		slow <- r // read again below
	default:
		if st := f.reg.Status()[0]; st.Draining != 1 {
			t.Fatalf("old version should be draining: %+v", st)
		}
	}
	r := <-slow
	if r.err != nil || r.v != "v1" {
		t.Fatalf("call running across the swap: %q, %v; want v1", r.v, r.err)
	}
	_, ev := f.ev.wait(t, 0, 10*time.Second, func(e Event) bool { return e.Kind == EventDrained })
	if ev.SHA256 != sum(v1) || ev.Err != nil {
		t.Fatalf("drained event %+v", ev)
	}
	if err := old.ContextProvider().Validate(ctx, clusterv1alpha1.MachineSpec{}); !errors.Is(err, ErrProviderClosed) {
		t.Fatalf("old version still open: %v", err)
	}
	if n := liveProviders(f.rt); n != 1 {
		t.Fatalf("%d providers open, want 1", n)
	}
}

// TestRegistryDuplicateNames: a name comes from one source; a second one is
// refused with a log line and the first keeps serving.
func TestRegistryDuplicateNames(t *testing.T) {
	ctx := context.Background()
	v1, v2 := guest(t, "v1", ""), guest(t, "v2", "")
	f := newFixture(t)
	d1, d2 := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(d1, "dup.wasm"), v1, 0o644)
	os.WriteFile(filepath.Join(d2, "dup.wasm"), v2, 0o644)
	if err := f.reg.LoadDir(ctx, d1); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.LoadDir(ctx, d2); !errors.Is(err, ErrDuplicateProvider) {
		t.Fatalf("second directory with the same name: %v, want ErrDuplicateProvider", err)
	}
	if err := f.reg.Register(ctx, "dup", v2, nil); !errors.Is(err, ErrDuplicateProvider) {
		t.Fatalf("Register over a directory provider: %v, want ErrDuplicateProvider", err)
	}
	h, _ := f.reg.Get("dup")
	if v, err := version(ctx, h, nil); err != nil || v != "v1" {
		t.Fatalf("version = %q, %v; want v1", v, err)
	}
	if !strings.Contains(f.logs.String(), "already provided by "+filepath.Join(d1, "dup.wasm")) {
		t.Fatalf("no clear log line:\n%s", f.logs.String())
	}
}

// TestRegistryPermissionError: an unreadable file is rejected, the good
// version keeps serving.
func TestRegistryPermissionError(t *testing.T) {
	ctx := context.Background()
	v1, v2 := guest(t, "v1", ""), guest(t, "v2", "")
	var deny atomic.Bool
	f := newFixture(t)
	// Root reads files whatever their mode, so the real chmod below only
	// bites for other users; the injected reader makes the test mean the
	// same for everyone.
	f.reg.cfg.readFile = func(p string) ([]byte, error) {
		if deny.Load() && strings.HasSuffix(p, ".wasm") {
			return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrPermission}
		}
		return os.ReadFile(p)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "p.wasm")
	os.WriteFile(path, v1, 0o644)
	if err := f.reg.LoadDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	h, _ := f.reg.Get("p")
	mark := f.ev.len()
	deny.Store(true)
	writeAtomic(t, path, v2)
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	_, ev := f.ev.wait(t, mark, 10*time.Second, func(e Event) bool { return e.Kind == EventRejected })
	if !errors.Is(ev.Err, fs.ErrPermission) {
		t.Fatalf("event %+v, want a permission error", ev)
	}
	if !strings.Contains(f.logs.String(), "permission denied") {
		t.Fatalf("no clear log line:\n%s", f.logs.String())
	}
	if v, err := version(ctx, h, nil); err != nil || v != "v1" {
		t.Fatalf("version = %q, %v; want v1", v, err)
	}
	// Readable again: the new version loads.
	deny.Store(false)
	os.Chmod(path, 0o644)
	waitFor(t, 10*time.Second, "v2 after the file became readable", func() bool { return h.SHA256() == sum(v2) })
}
