package registry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"oras.land/oras-go/v2/registry/remote"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
	"github.com/wasmprov/wasmprov/runtime/oci"
	"github.com/wasmprov/wasmprov/runtime/registry"
)

// ociEnv is a real registry on 127.0.0.1 and a client with its own store.
type ociEnv struct {
	reg      *testregistry.Registry
	client   *oci.Client
	storeDir string
}

func newOCIEnv(t *testing.T) *ociEnv {
	t.Helper()
	env := &ociEnv{reg: testregistry.Start(t, testregistry.Options{}), storeDir: t.TempDir()}
	env.client = ociClient(t, env.storeDir)
	return env
}

// ociClient is a plain-HTTP client (the registry is on loopback) whose
// store is dir.
func ociClient(t *testing.T, dir string) *oci.Client {
	t.Helper()
	store, err := oci.OpenStore(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	// No fixed request timeout: a push to the loopback registry on a busy
	// machine may take longer than any; the test's deadline bounds it.
	c, err := oci.New(oci.Options{Store: store, PlainHTTP: true, DockerConfig: filepath.Join(t.TempDir(), "none.json"), Timeout: untilDeadline(t)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// push pushes wasm to repo:tag and returns the manifest digest.
func (env *ociEnv) push(t *testing.T, wasm []byte, repoTag string) string {
	t.Helper()
	d, err := env.client.Push(testCtx(t), wasm, env.reg.Host+"/"+repoTag)
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// pushRaw pushes content as a Wasm artifact's layer whatever it is, the
// way a broken or hostile pipeline could.
func (env *ociEnv) pushRaw(t *testing.T, content []byte, repoName, tag string) {
	t.Helper()
	ctx := testCtx(t)
	repo, err := remote.NewRepository(env.reg.Host + "/" + repoName)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	cfg := []byte(`{"architecture":"wasm","os":"wasip1"}`)
	layer := ocispec.Descriptor{MediaType: oci.MediaTypeLayer, Digest: digest.FromBytes(content), Size: int64(len(content))}
	cfgDesc := ocispec.Descriptor{MediaType: oci.MediaTypeConfig, Digest: digest.FromBytes(cfg), Size: int64(len(cfg))}
	for _, b := range []struct {
		d ocispec.Descriptor
		b []byte
	}{{layer, content}, {cfgDesc, cfg}} {
		if err := repo.Push(ctx, b.d, bytes.NewReader(b.b)); err != nil {
			t.Fatal(err)
		}
	}
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cfgDesc, Layers: []ocispec.Descriptor{layer}}
	m.SchemaVersion = 2
	raw, _ := json.Marshal(m)
	md := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(raw), Size: int64(len(raw))}
	if err := repo.PushReference(ctx, md, bytes.NewReader(raw), tag); err != nil {
		t.Fatal(err)
	}
}

// pollEvery is the image poll interval of the tests that watch: on the
// fixture's fake clock, a test steps it to make the next poll.
const pollEvery = time.Hour

// precompile compiles wasm into the runtime's compilation cache, so that
// what a test then waits for is the registry's work, not the compiler's
// (a guest compiled under the race detector with a cold cache takes
// minutes).
func precompile(t *testing.T, f *fixture, wasm []byte) {
	t.Helper()
	p, err := f.rt.LoadBytes(context.Background(), "precompile", wasm)
	if err != nil {
		t.Fatalf("precompiling: %v", err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func fakeGuest(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fakeSpec(pass bool) clusterv1alpha1.MachineSpec {
	raw := fmt.Sprintf(`{"cloudProvider":"fake","cloudProviderSpec":{"passValidation":%t}}`, pass)
	var s clusterv1alpha1.MachineSpec
	s.ProviderSpec.Value = &k8sruntime.RawExtension{Raw: []byte(raw)}
	return s
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	writeAtomic(t, path, []byte(content))
}

func statusOf(t *testing.T, reg *registry.Registry, name string) registry.Status {
	t.Helper()
	for _, s := range reg.Status() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no status for %q", name)
	return registry.Status{}
}

// An entry naming a module by digest loads it through the registry and
// serves it under the inline policy, next to an ordinary file provider.
func TestImageEntryByDigest(t *testing.T) {
	env := newOCIEnv(t)
	d := env.push(t, fakeGuest(t), "providers/fake:v1")
	ref := env.reg.Host + "/providers/fake@" + d
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "fake.provider.yaml"), "image: "+ref+"\npolicy:\n  poolSize: 2\n")
	if err := os.WriteFile(filepath.Join(dir, "v.wasm"), guest(t, "v1", ""), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, registry.WithOCIClient(env.client))
	ctx := context.Background()
	if err := f.reg.LoadDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	h, err := f.reg.Get("fake")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Validate(ctx, fakeSpec(true), nil); err != nil {
		t.Fatalf("Validate(pass): %v", err)
	}
	if err := h.Validate(ctx, fakeSpec(false), nil); err == nil || !strings.Contains(err.Error(), "failing validation as requested") {
		t.Fatalf("Validate(fail) = %v, want the guest's refusal", err)
	}
	st := statusOf(t, f.reg, "fake")
	if !st.Serving || st.Image != ref || st.ImageDigest != d || st.PoolSize != 2 || st.Source != filepath.Join(dir, "fake.provider.yaml") {
		t.Fatalf("status = %+v", st)
	}
	if _, err := f.reg.Get("v"); err != nil {
		t.Fatalf("file provider next to the image entry: %v", err)
	}
	if st := statusOf(t, f.reg, "v"); st.Image != "" || st.Source != filepath.Join(dir, "v.wasm") {
		t.Fatalf("file provider status = %+v", st)
	}
	_, ev := f.ev.wait(t, 0, func(e registry.Event) bool { return e.Kind == registry.EventLoaded && e.Provider == "fake" })
	if ev.Image != ref {
		t.Fatalf("loaded event image = %q, want %q", ev.Image, ref)
	}
	// The same module and policy under its tag: no new version, but
	// Status names the reference now written.
	tagRef := env.reg.Host + "/providers/fake:v1"
	writeFile(t, filepath.Join(dir, "fake.provider.yaml"), "image: "+tagRef+"\npolicy:\n  poolSize: 2\n")
	if err := f.reg.Reload(ctx, "fake"); err != nil {
		t.Fatal(err)
	}
	if st2 := statusOf(t, f.reg, "fake"); st2.Image != tagRef || st2.ImageDigest != d || st2.ReloadsOK != st.ReloadsOK || !st2.LoadedAt.Equal(st.LoadedAt) {
		t.Fatalf("after naming the tag: status = %+v, want the same version under %s", st2, tagRef)
	}
}

// With the registry gone after the first pull, an entry by digest loads
// from the store alone.
func TestImageEntryByDigestFromStoreOffline(t *testing.T) {
	env := newOCIEnv(t)
	d := env.push(t, fakeGuest(t), "providers/fake:v1")
	ref := env.reg.Host + "/providers/fake@" + d
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "fake.provider.yaml"), "image: "+ref+"\n")
	// A fresh store, filled by the first registry's pull.
	storeDir := t.TempDir()
	first := newFixture(t, registry.WithOCIClient(ociClient(t, storeDir)))
	if err := first.reg.LoadDir(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	env.reg.Server.Close()
	before := env.reg.Requests()
	f := newFixture(t, registry.WithOCIClient(ociClient(t, storeDir)))
	if err := f.reg.LoadDir(context.Background(), dir); err != nil {
		t.Fatalf("loading from the store with the registry stopped: %v", err)
	}
	h, err := f.reg.Get("fake")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Validate(context.Background(), fakeSpec(true), nil); err != nil {
		t.Fatal(err)
	}
	if n := env.reg.Requests() - before; n != 0 {
		t.Fatalf("%d registry requests, want none", n)
	}
	if st := statusOf(t, f.reg, "fake"); st.ImageDigest != d {
		t.Fatalf("status = %+v", st)
	}
}

// A tag moved to a new module is swapped in at the next poll, through the
// same prepare and swap as a file: concurrent callers see no failure.
func TestImageTagMovedSwapsUnderLoad(t *testing.T) {
	env := newOCIEnv(t)
	d1 := env.push(t, guest(t, "v1", ""), "providers/v:stable")
	v2 := guest(t, "v2", "")
	dir := t.TempDir()
	ref := env.reg.Host + "/providers/v:stable"
	writeFile(t, filepath.Join(dir, "v.provider.yaml"), "image: "+ref+"\npolicy:\n  poolSize: 4\n")
	f := newFixture(t, registry.WithOCIClient(env.client), registry.WithImagePollInterval(pollEvery))
	ctx := context.Background()
	if err := f.reg.LoadDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := f.reg.Get("v")
	if err != nil {
		t.Fatal(err)
	}
	if st := statusOf(t, f.reg, "v"); st.Image != ref || st.ImageDigest != d1 {
		t.Fatalf("status = %+v, want %s at %s", st, ref, d1)
	}
	precompile(t, f, v2)
	l := f.startLoad(t, h, 4)
	l.waitCalls(t, 8) // the callers are at it
	from := f.ev.len()
	d2 := env.push(t, v2, "providers/v:stable")
	defer func() {
		if t.Failed() {
			t.Log(f.logs.String())
		}
	}()
	f.clock.Step(pollEvery)
	_, ev := f.ev.wait(t, from, func(e registry.Event) bool { return e.Provider == "v" && e.Kind == registry.EventReloaded })
	l.waitSaw(t, "v2")
	l.waitCalls(t, 8) // and go on after the swap
	l.halt()
	l.noFailures(t)
	if ev.SHA256 != sum(v2) || !strings.HasSuffix(ev.Image, "@"+d2) {
		t.Fatalf("reloaded event = %+v, want module %s from %s", ev, sum(v2), d2)
	}
	if st := statusOf(t, f.reg, "v"); st.ImageDigest != d2 || st.SHA256 != sum(v2) {
		t.Fatalf("status = %+v, want %s", st, d2)
	}
}

// A tag moved to a module that is not WebAssembly or fails the smoke call
// is refused, the old version keeps serving, and a good module pushed
// afterwards is taken at a later poll.
func TestImageTagMovedToBrokenKeepsServing(t *testing.T) {
	env := newOCIEnv(t)
	v1 := guest(t, "v1", "")
	d1 := env.push(t, v1, "providers/v:stable")
	dir := t.TempDir()
	ref := env.reg.Host + "/providers/v:stable"
	writeFile(t, filepath.Join(dir, "v.provider.yaml"), "image: "+ref+"\npullPolicy: Always\n")
	f := newFixture(t, registry.WithOCIClient(env.client), registry.WithImagePollInterval(pollEvery))
	ctx := context.Background()
	if err := f.reg.LoadDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	h, _ := f.reg.Get("v")

	// The smoke call panics.
	panics := guest(t, "v2", "panic")
	precompile(t, f, panics)
	from := f.ev.len()
	env.push(t, panics, "providers/v:stable")
	f.clock.Step(pollEvery)
	_, ev := f.ev.wait(t, from, func(e registry.Event) bool { return e.Provider == "v" && e.Kind == registry.EventRejected })
	if !errors.Is(ev.Err, registry.ErrSmokeTest) || ev.OldSHA256 != sum(v1) {
		t.Fatalf("rejected event = %+v, want a smoke failure with v1 serving", ev)
	}
	if v, err := version(ctx, h, nil); err != nil || v != "v1" {
		t.Fatalf("after a broken tag: %q, %v; want v1", v, err)
	}
	// The same broken digest is not tried again at every poll. A second
	// entry, whose registry is unreachable, is rejected at every poll: its
	// rejection at poll k+1 says poll k, "v" included, is over (one
	// goroutine polls every entry in turn).
	canary := t.TempDir()
	writeFile(t, filepath.Join(canary, "gone.provider.yaml"), "image: 127.0.0.1:1/providers/gone:v1\n")
	if err := f.reg.LoadDir(ctx, canary); err == nil {
		t.Fatal("an image entry on an unreachable registry loaded")
	}
	rejectedV := func() int {
		n := 0
		f.ev.mu.Lock()
		defer f.ev.mu.Unlock()
		for _, e := range f.ev.all {
			if e.Provider == "v" && e.Kind == registry.EventRejected {
				n++
			}
		}
		return n
	}
	n := rejectedV()
	for range 3 {
		from := f.ev.len()
		// The canary backs off (up to 8 intervals): a step of 8 is a
		// poll that tries every entry.
		f.clock.Step(8 * pollEvery)
		f.ev.wait(t, from, func(e registry.Event) bool { return e.Provider == "gone" && e.Kind == registry.EventRejected })
	}
	if m := rejectedV(); m != n {
		t.Fatalf("%d more rejections of the same digest in two polls", m-n)
	}

	// Not WebAssembly at all (oci.Push refuses to make such an artifact,
	// so it is pushed by hand).
	from = f.ev.len()
	env.pushRaw(t, []byte("#!/bin/sh\necho not a module\n"), "providers/v", "stable")
	f.clock.Step(pollEvery)
	_, ev = f.ev.wait(t, from, func(e registry.Event) bool { return e.Provider == "v" && e.Kind == registry.EventRejected })
	if !errors.Is(ev.Err, oci.ErrRefused) || !strings.Contains(ev.Err.Error(), "not a WebAssembly module") || ev.OldSHA256 != sum(v1) {
		t.Fatalf("rejected event = %+v, want the pull refused with v1 still serving", ev)
	}
	if st := statusOf(t, f.reg, "v"); !st.Serving || st.ImageDigest != d1 || st.SHA256 != sum(v1) || st.ReloadsFailed < 2 || st.LastError == "" {
		t.Fatalf("status = %+v, want v1 from %s serving and the failures counted", st, d1)
	}
	if v, err := version(ctx, h, nil); err != nil || v != "v1" {
		t.Fatalf("after a corrupt tag: %q, %v; want v1", v, err)
	}

	v3 := guest(t, "v3", "")
	precompile(t, f, v3)
	d3 := env.push(t, v3, "providers/v:stable")
	f.clock.Step(pollEvery)
	waitServing(t, f, "v", sum(v3))
	if st := statusOf(t, f.reg, "v"); st.ImageDigest != d3 {
		t.Fatalf("status = %+v, want %s", st, d3)
	}
}

// An unreachable registry at start is an error for that provider alone;
// the others serve, and the pull is retried at the polls, backing off:
// after two failures in a row, the next poll skips it.
func TestImageUnreachableRegistry(t *testing.T) {
	env := newOCIEnv(t)
	d := env.push(t, fakeGuest(t), "providers/fake:v1")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "fake.provider.yaml"), "image: "+env.reg.Host+"/providers/fake@"+d+"\n")
	// Port 1 on loopback: nothing listens, the connection is refused.
	writeFile(t, filepath.Join(dir, "gone.provider.yaml"), "image: 127.0.0.1:1/providers/gone:v1\n")
	if err := os.WriteFile(filepath.Join(dir, "v.wasm"), guest(t, "v1", ""), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, registry.WithOCIClient(env.client), registry.WithImagePollInterval(pollEvery))
	ctx := context.Background()
	err := f.reg.LoadDir(ctx, dir)
	if err == nil || !strings.Contains(err.Error(), `provider "gone"`) || !strings.Contains(err.Error(), "127.0.0.1:1/providers/gone:v1") {
		t.Fatalf("LoadDir = %v, want an error naming provider gone and its image", err)
	}
	for _, name := range []string{"fake", "v"} {
		if _, err := f.reg.Get(name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := f.reg.Get("gone"); !errors.Is(err, registry.ErrProviderNotFound) {
		t.Fatalf("gone: %v", err)
	}
	if st := statusOf(t, f.reg, "gone"); st.Serving || !strings.Contains(st.LastError, "127.0.0.1:1") {
		t.Fatalf("status = %+v", st)
	}
	if !strings.Contains(f.logs.String(), "provider version rejected") {
		t.Fatal("no rejection logged")
	}
	if err := f.reg.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	// The start failed once: poll 1 tries again.
	from := f.ev.len()
	f.clock.Step(pollEvery)
	if _, ev := f.ev.wait(t, from, func(e registry.Event) bool { return e.Kind == registry.EventRejected }); ev.Provider != "gone" {
		t.Fatalf("poll 1: rejected %+v, want the retry of gone", ev)
	}
	// Two failures in a row: polls 2 and 3, one of them tries again,
	// whichever way the ticks and the poller interleave; without the
	// back-off both would.
	from = f.ev.len()
	f.clock.Step(pollEvery)
	f.clock.Step(pollEvery)
	f.ev.wait(t, from, func(e registry.Event) bool { return e.Provider == "gone" && e.Kind == registry.EventRejected })
	if st := statusOf(t, f.reg, "gone"); st.ReloadsFailed != 3 || st.PullsFailed != 3 {
		t.Fatalf("status = %+v, want 3 failed attempts: the start, poll 1, and poll 2 or 3", st)
	}
	// Logged once, at the start; the repeats are counted, not logged.
	if n := strings.Count(f.logs.String(), "provider version rejected"); n != 1 {
		t.Fatalf("%d rejections logged, want 1:\n%s", n, f.logs.String())
	}
}

// A digest the repository does not have is refused with a clear error.
func TestImageMissingDigest(t *testing.T) {
	env := newOCIEnv(t)
	env.push(t, fakeGuest(t), "providers/fake:v1")
	dir := t.TempDir()
	missing := "sha256:" + strings.Repeat("ab", 32)
	writeFile(t, filepath.Join(dir, "fake.provider.yaml"), "image: "+env.reg.Host+"/providers/fake@"+missing+"\n")
	f := newFixture(t, registry.WithOCIClient(env.client))
	err := f.reg.LoadDir(context.Background(), dir)
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("LoadDir = %v, want an error naming the digest", err)
	}
	if _, err := f.reg.Get("fake"); !errors.Is(err, registry.ErrProviderNotFound) {
		t.Fatalf("Get = %v", err)
	}
}

// A verify block needs a verifier: without one the entry is refused; the
// verifier gets the entry's name, reference, digest and block, and its
// refusal keeps the old version serving.
func TestImageVerifier(t *testing.T) {
	env := newOCIEnv(t)
	d := env.push(t, fakeGuest(t), "providers/fake:v1")
	ref := env.reg.Host + "/providers/fake:v1"
	dir := t.TempDir()
	entry := "image: " + ref + "\nverify:\n  keyless:\n    identity: ci@example.com\n"
	writeFile(t, filepath.Join(dir, "fake.provider.yaml"), entry)
	ctx := context.Background()

	plain := newFixture(t, registry.WithOCIClient(env.client))
	if err := plain.reg.LoadDir(ctx, dir); !errors.Is(err, registry.ErrNoVerifier) {
		t.Fatalf("without a verifier: %v, want ErrNoVerifier", err)
	}
	if _, err := plain.reg.Get("fake"); err == nil {
		t.Fatal("an entry with a verify block served unverified")
	}

	type call struct{ name, ref, digest, doc string }
	var (
		mu     sync.Mutex
		calls  []call
		refuse atomic.Bool
	)
	verifier := func(_ context.Context, req registry.VerifyRequest) error {
		name, ref, digest, doc := req.Provider, req.Ref, req.Digest, req.Verify
		mu.Lock()
		calls = append(calls, call{name, ref, digest, string(doc)})
		mu.Unlock()
		if refuse.Load() {
			return errors.New("signature does not match")
		}
		return nil
	}
	f := newFixture(t, registry.WithOCIClient(env.client), registry.WithVerifier(verifier))
	if err := f.reg.LoadDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	want := call{"fake", ref, d, `{"keyless":{"identity":"ci@example.com"}}`}
	if len(calls) != 1 || calls[0] != want {
		t.Fatalf("verifier calls = %+v, want [%+v]", calls, want)
	}
	h, err := f.reg.Get("fake")
	if err != nil {
		t.Fatal(err)
	}
	// Unchanged digest and block: not verified again.
	if err := f.reg.Reload(ctx, "fake"); err != nil || len(calls) != 1 {
		t.Fatalf("reload: %v, %d verifier calls", err, len(calls))
	}
	// A new digest that the verifier refuses.
	refuse.Store(true)
	env.push(t, guest(t, "v2", ""), "providers/fake:v1")
	err = f.reg.Reload(ctx, "fake")
	if !errors.Is(err, registry.ErrVerification) || !strings.Contains(err.Error(), "signature does not match") {
		t.Fatalf("reload with a refused artifact: %v, want ErrVerification", err)
	}
	if err := h.Validate(ctx, fakeSpec(true), nil); err != nil {
		t.Fatalf("the verified version stopped serving: %v", err)
	}
	if st := statusOf(t, f.reg, "fake"); st.ImageDigest != d {
		t.Fatalf("status = %+v, want %s", st, d)
	}
}

// Image entries are decoded strictly; a module file and an image entry
// for one name are refused; neither needs the network to be refused.
func TestImageEntryRefused(t *testing.T) {
	env := newOCIEnv(t)
	good := "image: " + env.reg.Host + "/providers/fake:v1\n"
	for _, tc := range []struct{ name, entry, want string }{
		{"unknown-field", good + "polcy: {}\n", "polcy"},
		{"unknown-policy-field", good + "policy:\n  poolSzie: 2\n", "poolSzie"},
		{"duplicate-key", good + good, "image"},
		{"no-image", "pullPolicy: Always\n", "image: required"},
		{"no-tag", "image: " + env.reg.Host + "/providers/fake\n", "neither a tag nor a digest"},
		{"bad-pull-policy", good + "pullPolicy: Sometimes\n", "Sometimes"},
		{"bad-ref", "image: 'not a ref'\n", "image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "fake.provider.yaml"), tc.entry)
			f := newFixture(t, registry.WithOCIClient(env.client))
			before := env.reg.Requests()
			err := f.reg.LoadDir(context.Background(), dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "fake.provider.yaml") {
				t.Fatalf("LoadDir = %v, want an error about %q naming the file", err, tc.want)
			}
			if n := env.reg.Requests() - before; n != 0 {
				t.Fatalf("%d registry requests for a refused entry", n)
			}
		})
	}
	t.Run("both-file-and-image", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "fake.provider.yaml"), good)
		if err := os.WriteFile(filepath.Join(dir, "fake.wasm"), fakeGuest(t), 0o644); err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, registry.WithOCIClient(env.client))
		if err := f.reg.LoadDir(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "remove one") {
			t.Fatalf("LoadDir = %v", err)
		}
	})
	t.Run("no-client", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "fake.provider.yaml"), good)
		f := newFixture(t)
		if err := f.reg.LoadDir(context.Background(), dir); !errors.Is(err, registry.ErrNoOCIClient) {
			t.Fatalf("LoadDir = %v, want ErrNoOCIClient", err)
		}
	})
}

// "<name>.provider.yaml" next to "<name>.provider.wasm" keeps its old
// meaning: the policy of provider "<name>.provider".
func TestImageSuffixKeepsFileLayout(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.provider.wasm"), guest(t, "v1", ""), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "x.provider.yaml"), "poolSize: 3\n")
	f := newFixture(t)
	if err := f.reg.LoadDir(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if names := f.reg.Names(); len(names) != 1 || names[0] != "x.provider" {
		t.Fatalf("names = %v", names)
	}
	if st := statusOf(t, f.reg, "x.provider"); st.PoolSize != 3 || st.Image != "" {
		t.Fatalf("status = %+v", st)
	}
	for _, s := range f.reg.Status() {
		if s.Name == "x" {
			t.Fatalf("a stray entry %q: %+v", s.Name, s)
		}
	}
}

// An image entry written into a watched directory loads; removing it
// unloads the provider, and a registry "not found" never does.
func TestImageEntryWatchedAddRemove(t *testing.T) {
	env := newOCIEnv(t)
	d := env.push(t, fakeGuest(t), "providers/fake:v1")
	f, dir := watchedFixture(t, registry.WithOCIClient(env.client), registry.WithImagePollInterval(pollEvery))
	path := filepath.Join(dir, "fake.provider.yaml")
	writeFile(t, path, "image: "+env.reg.Host+"/providers/fake@"+d+"\n")
	f.ev.wait(t, 0, func(e registry.Event) bool { return e.Provider == "fake" && e.Kind == registry.EventLoaded })
	// The entry now names a digest the repository lacks: rejected at
	// once and at the polls (backing off: 1, then 2 intervals), and still
	// serving.
	from := f.ev.len()
	writeFile(t, path, "image: "+env.reg.Host+"/providers/fake@sha256:"+strings.Repeat("cd", 32)+"\n")
	f.ev.wait(t, from, func(e registry.Event) bool { return e.Provider == "fake" && e.Kind == registry.EventRejected })
	for range 2 {
		from = f.ev.len()
		f.clock.Step(2 * pollEvery)
		f.ev.wait(t, from, func(e registry.Event) bool { return e.Provider == "fake" && e.Kind == registry.EventRejected })
		if _, err := f.reg.Get("fake"); err != nil || f.ev.count(registry.EventUnloaded) != 0 {
			t.Fatalf("a missing digest unloaded the provider: %v", err)
		}
	}
	from = f.ev.len()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	f.ev.wait(t, from, func(e registry.Event) bool { return e.Provider == "fake" && e.Kind == registry.EventUnloaded })
	// Removed, it is forgotten once its last version drained.
	f.waitFor(t, "fake forgotten by Status", func() bool {
		return !slices.ContainsFunc(f.reg.Status(), func(s registry.Status) bool { return s.Name == "fake" })
	})
	if _, err := f.reg.Get("fake"); !errors.Is(err, registry.ErrProviderNotFound) || errors.Is(err, registry.ErrNotServing) {
		t.Fatalf("Get of a removed provider: %v", err)
	}
}
