package registry_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/wasmprov/wasmprov/cloud"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/registry"
)

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
	if _, err := cloud.SeedProvider(h, nil).Get(testMachine(nil)); err != nil {
		t.Fatal(err)
	}

	_, err = f.reg.Get("nope")
	if !errors.Is(err, registry.ErrProviderNotFound) {
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
	if err := f.reg.Register(ctx, "code", v1, &runtime.Policy{PoolSize: 1}); err != nil {
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
	// Unregister: calls fail with registry.ErrProviderNotFound, and Get too.
	if err := f.reg.Unregister("code"); err != nil {
		t.Fatal(err)
	}
	if _, err := version(ctx, h, nil); !errors.Is(err, registry.ErrProviderNotFound) {
		t.Fatalf("call after Unregister = %v, want ErrProviderNotFound", err)
	}
	if _, err := f.reg.Get("code"); !errors.Is(err, registry.ErrProviderNotFound) {
		t.Fatalf("Get after Unregister = %v", err)
	}
}

// TestRegistryRejectsBadVersions: a corrupt module, the wrong ABI, a failed
// digest pin, a smoke call that panics and one that hangs are each
// rejected with a log line and an event, and the good version keeps
// serving.
func TestRegistryRejectsBadVersions(t *testing.T) {
	ctx := context.Background()
	v1 := guest(t, "v1", "")
	f := newFixture(t, registry.WithSmokeTimeout(time.Second))
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
		{"corrupt", []byte("\x00asm\x01\x00\x00\x00garbage"), "", runtime.ErrInvalidModule, "not a valid WebAssembly module"},
		{"half-written", v1[:len(v1)/2], "", runtime.ErrInvalidModule, "not a valid WebAssembly module"},
		{"wrong ABI", emptyModule, "", runtime.ErrInvalidModule, "missing export"},
		{"digest pin", guest(t, "v2", ""), "sha256: \"" + strings.Repeat("0", 64) + "\"\n", runtime.ErrInvalidModule, "does not match the pinned"},
		{"smoke panics", guest(t, "v3", "panic"), "", registry.ErrSmokeTest, "guest panicked"},
		{"smoke hangs", guest(t, "v4", "hang"), "", registry.ErrSmokeTest, "timed out"},
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
			_, ev := f.ev.wait(t, mark, func(e registry.Event) bool { return e.Kind == registry.EventRejected })
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
	f.waitFor(t, "rejected versions closed", func() bool { return liveProviders(f.rt) == 1 })
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
	if err := f.reg.LoadDir(ctx, d2); !errors.Is(err, registry.ErrDuplicateProvider) {
		t.Fatalf("second directory with the same name: %v, want ErrDuplicateProvider", err)
	}
	if err := f.reg.Register(ctx, "dup", v2, nil); !errors.Is(err, registry.ErrDuplicateProvider) {
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
	registry.SetReadFile(f.reg, func(p string) ([]byte, error) {
		if deny.Load() && strings.HasSuffix(p, ".wasm") {
			return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrPermission}
		}
		return os.ReadFile(p)
	})
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
	_, ev := f.ev.wait(t, mark, func(e registry.Event) bool { return e.Kind == registry.EventRejected })
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
	f.waitFor(t, "v2 after the file became readable", func() bool { return h.SHA256() == sum(v2) })
}
