package registry_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/metadata"
	"github.com/wasmprov/wasmprov/runtime/oci"
	"github.com/wasmprov/wasmprov/runtime/registry"
)

func parsePolicy(t *testing.T, y string) *runtime.Policy {
	t.Helper()
	p, err := runtime.ParsePolicy([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return &p
}

// versionErr returns err as a *registry.VersionError, failing the test
// if it is not one or refused at another stage.
func versionErr(t *testing.T, err error, stage registry.Stage) *registry.VersionError {
	t.Helper()
	ve, ok := errors.AsType[*registry.VersionError](err)
	if !ok {
		t.Fatalf("error %v (%T) is not a *registry.VersionError", err, err)
	}
	if ve.Stage != stage {
		t.Fatalf("refused at stage %q, want %q: %v", ve.Stage, stage, err)
	}
	return ve
}

// An image registered by code serves like an image entry, with its own
// source in Status and events; registering the same image again is a
// no-op that asks the registry nothing (a digest) or one resolve (a tag
// with PullAlways).
func TestRegisterImage(t *testing.T) {
	env := newOCIEnv(t)
	d := env.push(t, fakeGuest(t), "providers/fake:v1")
	ref := env.reg.Host + "/providers/fake@" + d
	f := newFixture(t, registry.WithOCIClient(env.client))
	ctx := context.Background()
	img := registry.Image{Ref: ref, Policy: parsePolicy(t, "poolSize: 2\n")}
	if err := f.reg.RegisterImage(ctx, "fake", img); err != nil {
		t.Fatal(err)
	}
	h, err := f.reg.Get("fake")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Validate(ctx, fakeSpec(true), nil); err != nil {
		t.Fatalf("Validate(pass): %v", err)
	}
	st := statusOf(t, f.reg, "fake")
	if !st.Serving || st.Source != "image:"+ref || st.Image != ref || st.ImageDigest != d || st.PoolSize != 2 {
		t.Fatalf("status = %+v", st)
	}
	_, ev := f.ev.wait(t, 0, func(e registry.Event) bool { return e.Kind == registry.EventLoaded && e.Provider == "fake" })
	if ev.Image != ref || ev.Source != "image:"+ref {
		t.Fatalf("loaded event = %+v, want image %s from source image:%s", ev, ref, ref)
	}

	// The same Image (a fresh value): nothing reloaded, nothing asked.
	events := f.ev.len()
	before := env.reg.Requests()
	if err := f.reg.RegisterImage(ctx, "fake", registry.Image{Ref: ref, Policy: parsePolicy(t, "poolSize: 2\n")}); err != nil {
		t.Fatal(err)
	}
	if n := env.reg.Requests() - before; n != 0 {
		t.Fatalf("registering the same digest again made %d registry requests", n)
	}
	if st2 := statusOf(t, f.reg, "fake"); st2.ReloadsOK != st.ReloadsOK || !st2.LoadedAt.Equal(st.LoadedAt) || f.ev.len() != events {
		t.Fatalf("the same image reloaded: %+v", st2)
	}

	// Its tag (PullAlways by default): one resolve each time, the same
	// version, Status naming the tag.
	tagRef := env.reg.Host + "/providers/fake:v1"
	for i := range 2 {
		before = env.reg.Requests()
		if err := f.reg.RegisterImage(ctx, "fake", registry.Image{Ref: tagRef, Policy: parsePolicy(t, "poolSize: 2\n")}); err != nil {
			t.Fatal(err)
		}
		if n := env.reg.Requests() - before; n != 1 {
			t.Fatalf("registration %d of the tag with PullAlways made %d registry requests, want 1 (the resolve)", i, n)
		}
	}
	if st2 := statusOf(t, f.reg, "fake"); st2.Image != tagRef || st2.ImageDigest != d || st2.Source != "image:"+tagRef || st2.ReloadsOK != st.ReloadsOK {
		t.Fatalf("after the tag: status = %+v, want the same version under %s", st2, tagRef)
	}
	// With PullIfNotPresent the tag resolved before is not resolved again.
	before = env.reg.Requests()
	if err := f.reg.RegisterImage(ctx, "fake", registry.Image{Ref: tagRef, PullPolicy: registry.PullIfNotPresent, Policy: parsePolicy(t, "poolSize: 2\n")}); err != nil {
		t.Fatal(err)
	}
	if n := env.reg.Requests() - before; n != 0 {
		t.Fatalf("IfNotPresent tag made %d requests", n)
	}
	// Another policy is another version.
	if err := f.reg.RegisterImage(ctx, "fake", registry.Image{Ref: ref, Policy: parsePolicy(t, "poolSize: 3\n")}); err != nil {
		t.Fatal(err)
	}
	if st2 := statusOf(t, f.reg, "fake"); st2.PoolSize != 3 || st2.ReloadsOK != st.ReloadsOK+1 {
		t.Fatalf("after a new policy: status = %+v", st2)
	}
	if err := f.reg.Unregister("fake"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.reg.Get("fake"); !errors.Is(err, registry.ErrProviderNotFound) {
		t.Fatalf("after Unregister: %v", err)
	}
}

// Every refusal is a *VersionError naming its stage, the reference, the
// digest once resolved and the module once known; errors.Is finds the
// cause; the message is the same every time; the old version serves on.
func TestRegisterImageRefusals(t *testing.T) {
	env := newOCIEnv(t)
	v1 := guest(t, "v1", "")
	d1 := env.push(t, v1, "providers/v:v1")
	ref1 := env.reg.Host + "/providers/v@" + d1
	incompatible, err := metadata.Write(v1, &metadata.Metadata{Name: "v", MinHostVersion: "99.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	dIncompatible := env.push(t, incompatible, "providers/v:incompatible")
	empty := []byte("\x00asm\x01\x00\x00\x00") // valid WebAssembly, no ABI
	dEmpty := env.push(t, empty, "providers/v:empty")
	panics := guest(t, "v2", "panic")
	dPanics := env.push(t, panics, "providers/v:panics")
	env.pushRaw(t, []byte("#!/bin/sh\n"), "providers/v", "script")
	missing := "sha256:" + strings.Repeat("ab", 32)

	var verified atomic.Int64
	verifier := func(_ context.Context, req registry.VerifyRequest) error {
		doc := req.Verify
		verified.Add(1)
		if strings.Contains(string(doc), "refuse") {
			return errors.New("signature does not match")
		}
		return nil
	}
	f := newFixture(t, registry.WithOCIClient(env.client), registry.WithVerifier(verifier))
	ctx := context.Background()
	if err := f.reg.RegisterImage(ctx, "v", registry.Image{Ref: ref1}); err != nil {
		t.Fatal(err)
	}
	h, err := f.reg.Get("v")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		img          registry.Image
		stage        registry.Stage
		want         []error
		digest, sum  string
		wantInString string
	}{
		{"missing-digest", registry.Image{Ref: env.reg.Host + "/providers/v@" + missing}, registry.StagePull, []error{registry.ErrPull}, missing, "", missing},
		{"unreachable", registry.Image{Ref: "127.0.0.1:1/providers/v:v1"}, registry.StagePull, []error{registry.ErrPull}, "", "", "127.0.0.1:1/providers/v:v1"},
		{"not-a-module", registry.Image{Ref: env.reg.Host + "/providers/v:script"}, registry.StagePull, []error{registry.ErrPull, oci.ErrRefused}, "?", "", "not a WebAssembly module"},
		{"invalid-ref", registry.Image{Ref: "not a ref"}, registry.StagePull, []error{registry.ErrInvalidImage}, "", "", "not a ref"},
		{"bad-pull-policy", registry.Image{Ref: ref1, PullPolicy: "Sometimes"}, registry.StagePull, []error{registry.ErrInvalidImage}, "", "", "Sometimes"},
		{"verify-refused", registry.Image{Ref: ref1, Verify: json.RawMessage(`{"refuse":true}`)}, registry.StageVerify, []error{registry.ErrVerification}, d1, sum(v1), "signature does not match"},
		{"incompatible", registry.Image{Ref: env.reg.Host + "/providers/v@" + dIncompatible}, registry.StageLoad, []error{metadata.ErrIncompatible}, dIncompatible, sum(incompatible), "99.0.0"},
		{"no-abi", registry.Image{Ref: env.reg.Host + "/providers/v:empty"}, registry.StageLoad, []error{runtime.ErrInvalidModule}, dEmpty, sum(empty), ""},
		{"smoke", registry.Image{Ref: env.reg.Host + "/providers/v@" + dPanics}, registry.StageSmoke, []error{registry.ErrSmokeTest}, dPanics, sum(panics), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := f.reg.RegisterImage(ctx, "v", tc.img)
			ve := versionErr(t, err, tc.stage)
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("errors.Is(%v, %v) = false", err, w)
				}
			}
			if ve.Provider != "v" || ve.Ref != tc.img.Ref || (tc.digest != "?" && ve.Digest != tc.digest) || ve.ModuleSHA256 != tc.sum {
				t.Errorf("VersionError = {Provider:%q Ref:%q Digest:%q ModuleSHA256:%q}, want {v %q %q %q}", ve.Provider, ve.Ref, ve.Digest, ve.ModuleSHA256, tc.img.Ref, tc.digest, tc.sum)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.wantInString) || !strings.HasPrefix(msg, `provider "v": `) || strings.HasPrefix(msg, `provider "v": provider "v"`) {
				t.Errorf("message %q: want %q in it and the provider named first, once", msg, tc.wantInString)
			}
			// The same refusal reads the same.
			if again := f.reg.RegisterImage(ctx, "v", tc.img); again == nil || again.Error() != msg {
				t.Errorf("second refusal %q, first %q", again, msg)
			}
			if v, err := version(ctx, h, nil); err != nil || v != "v1" {
				t.Fatalf("after a refusal: %q, %v; want v1 serving", v, err)
			}
			if st := statusOf(t, f.reg, "v"); st.ImageDigest != d1 || st.Image != ref1 || st.LastError != msg {
				t.Errorf("status = %+v, want v1 from %s and the refusal as last error", st, d1)
			}
		})
	}
	if n := verified.Load(); n != 2 {
		t.Errorf("the verifier was called %d times, want 2 (a refusal is not remembered)", n)
	}

	t.Run("no-verifier", func(t *testing.T) {
		plain := newFixture(t, registry.WithOCIClient(env.client))
		before := env.reg.Requests()
		err := plain.reg.RegisterImage(ctx, "v", registry.Image{Ref: ref1, Verify: json.RawMessage(`{"keyless":{}}`)})
		versionErr(t, err, registry.StageVerify)
		if !errors.Is(err, registry.ErrNoVerifier) {
			t.Fatalf("%v, want ErrNoVerifier", err)
		}
		if n := env.reg.Requests() - before; n != 0 {
			t.Fatalf("%d registry requests for an image refused for want of a verifier", n)
		}
		// An empty block asks for verification too: fail closed.
		if err := plain.reg.RegisterImage(ctx, "v", registry.Image{Ref: ref1, Verify: json.RawMessage{}}); !errors.Is(err, registry.ErrNoVerifier) {
			t.Fatalf("empty verify block: %v, want ErrNoVerifier", err)
		}
		if _, err := plain.reg.Get("v"); err == nil {
			t.Fatal("served unverified")
		}
	})
	t.Run("client", func(t *testing.T) {
		none := newFixture(t)
		err := none.reg.RegisterImage(ctx, "v", registry.Image{Ref: ref1})
		versionErr(t, err, registry.StagePull)
		if !errors.Is(err, registry.ErrNoOCIClient) || !errors.Is(err, registry.ErrPull) {
			t.Fatalf("%v, want ErrNoOCIClient", err)
		}
		// The Image's own client needs no registry-wide one.
		if err := none.reg.RegisterImage(ctx, "v", registry.Image{Ref: ref1, Client: env.client}); err != nil {
			t.Fatal(err)
		}
		if v, err := version(ctx, mustGet(t, none.reg, "v"), nil); err != nil || v != "v1" {
			t.Fatalf("%q, %v", v, err)
		}
	})
	t.Run("register-bytes", func(t *testing.T) {
		err := f.reg.Register(ctx, "b", empty, nil)
		ve := versionErr(t, err, registry.StageLoad)
		if !errors.Is(err, runtime.ErrInvalidModule) || ve.ModuleSHA256 != sum(empty) || ve.Ref != "" {
			t.Fatalf("%v (%+v), want ErrInvalidModule", err, ve)
		}
		err = f.reg.Register(ctx, "b", panics, nil)
		versionErr(t, err, registry.StageSmoke)
		if !errors.Is(err, registry.ErrSmokeTest) || !strings.HasPrefix(err.Error(), `provider "b": smoke call failed: `) {
			t.Fatalf("%v, want ErrSmokeTest naming the provider", err)
		}
		err = f.reg.Register(ctx, "b", incompatible, nil)
		versionErr(t, err, registry.StageLoad)
		if !errors.Is(err, metadata.ErrIncompatible) {
			t.Fatalf("%v, want metadata.ErrIncompatible", err)
		}
	})
}

func mustGet(t *testing.T, reg *registry.Registry, name string) *registry.Handle {
	t.Helper()
	h, err := reg.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A registry refusing the client's credentials is a pull refusal whose
// text, in the error, Status, the event and the log, holds nothing of
// the password.
func TestRegisterImageWrongPasswordNotInError(t *testing.T) {
	const user, good, bad = "ci", "the-right-password", "s3cret-wr0ng-passw0rd"
	reg := testregistry.Start(t, testregistry.Options{User: user, Password: good})
	pusher, err := oci.New(oci.Options{PlainHTTP: true, DockerConfig: testregistry.DockerConfig(t, reg.Host, user, good)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := pusher.Push(ctx, fakeGuest(t), reg.Host+"/providers/fake:v1")
	if err != nil {
		t.Fatal(err)
	}
	store, err := oci.OpenStore(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := oci.New(oci.Options{Store: store, PlainHTTP: true, DockerConfig: testregistry.DockerConfig(t, reg.Host, user, bad)})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	secrets := []string{bad, base64.StdEncoding.EncodeToString([]byte(user + ":" + bad))}
	for _, ref := range []string{reg.Host + "/providers/fake:v1", reg.Host + "/providers/fake@" + d.String()} {
		err := f.reg.RegisterImage(ctx, "fake", registry.Image{Ref: ref, Client: wrong})
		versionErr(t, err, registry.StagePull)
		if !errors.Is(err, registry.ErrPull) {
			t.Fatalf("%v, want ErrPull", err)
		}
		again := f.reg.RegisterImage(ctx, "fake", registry.Image{Ref: ref, Client: wrong})
		if again == nil || again.Error() != err.Error() {
			t.Fatalf("the same refusal reads differently: %q, then %q", err, again)
		}
		texts := []string{err.Error(), statusOf(t, f.reg, "fake").LastError, f.logs.String()}
		f.ev.mu.Lock()
		for _, ev := range f.ev.all {
			if ev.Err != nil {
				texts = append(texts, ev.Err.Error())
			}
		}
		f.ev.mu.Unlock()
		if len(texts) < 4 {
			t.Fatal("no rejection event")
		}
		for _, text := range texts {
			for _, s := range secrets {
				if strings.Contains(text, s) {
					t.Fatalf("the password is in %q", text)
				}
			}
		}
	}
	// The right credentials, per provider, work.
	right, err := oci.New(oci.Options{Store: store, PlainHTTP: true, DockerConfig: testregistry.DockerConfig(t, reg.Host, user, good)})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.reg.RegisterImage(ctx, "fake", registry.Image{Ref: reg.Host + "/providers/fake@" + d.String(), Client: right}); err != nil {
		t.Fatal(err)
	}
}

// A rollback to a digest verified before asks neither the verifier nor
// the registry, even through a store far over its size cap: the registry
// pins what it verified.
func TestRegisterImageRollbackOffline(t *testing.T) {
	env := newOCIEnv(t)
	vA, vB := guest(t, "v1", ""), guest(t, "v2", "")
	dA := env.push(t, vA, "providers/v:a")
	dB := env.push(t, vB, "providers/v:b")
	// The registry's client has a store of its own that holds less than
	// one artifact: without pins, GC drops A when B is pulled.
	store, err := oci.OpenStore(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := oci.New(oci.Options{Store: store, PlainHTTP: true, DockerConfig: filepath.Join(t.TempDir(), "none.json")})
	if err != nil {
		t.Fatal(err)
	}
	var verified atomic.Int64
	verifier := func(context.Context, registry.VerifyRequest) error {
		verified.Add(1)
		return nil
	}
	f := newFixture(t, registry.WithOCIClient(c), registry.WithVerifier(verifier))
	ctx := context.Background()
	verify := json.RawMessage(`{"keyless":{"identity":"ci@example.com"}}`)
	imgA := registry.Image{Ref: env.reg.Host + "/providers/v@" + dA, Verify: verify}
	imgB := registry.Image{Ref: env.reg.Host + "/providers/v@" + dB, Verify: verify}
	for _, img := range []registry.Image{imgA, imgB} {
		if err := f.reg.RegisterImage(ctx, "v", img); err != nil {
			t.Fatal(err)
		}
	}
	h := mustGet(t, f.reg, "v")
	if v, err := version(ctx, h, nil); err != nil || v != "v2" {
		t.Fatalf("%q, %v; want v2", v, err)
	}
	from := f.ev.len()
	before := env.reg.Requests()
	if err := f.reg.RegisterImage(ctx, "v", imgA); err != nil {
		t.Fatal(err)
	}
	if n := env.reg.Requests() - before; n != 0 {
		t.Fatalf("the rollback made %d registry requests", n)
	}
	if n := verified.Load(); n != 2 {
		t.Fatalf("the verifier was called %d times, want 2 (A and B, once each)", n)
	}
	if v, err := version(ctx, h, nil); err != nil || v != "v1" {
		t.Fatalf("%q, %v; want v1 serving again", v, err)
	}
	_, ev := f.ev.wait(t, from, func(e registry.Event) bool { return e.Kind == registry.EventReloaded })
	if ev.SHA256 != sum(vA) || !strings.HasSuffix(ev.Image, "@"+dA) {
		t.Fatalf("reloaded event = %+v, want A", ev)
	}
	// Another verify block is another policy: verified again.
	if err := f.reg.RegisterImage(ctx, "v", registry.Image{Ref: imgA.Ref, Verify: json.RawMessage(`{"keyless":{"identity":"other@example.com"}}`)}); err != nil {
		t.Fatal(err)
	}
	if n := verified.Load(); n != 3 {
		t.Fatalf("the verifier was called %d times, want 3", n)
	}
}

// Code sources replace each other under one name; a name a directory
// provides is refused to code, and a name code provides to a directory.
func TestRegisterImageReplacesCodeSources(t *testing.T) {
	env := newOCIEnv(t)
	v1, v2, v3 := guest(t, "v1", ""), guest(t, "v2", ""), guest(t, "v3", "")
	d2 := env.push(t, v2, "providers/v:v2")
	ref := env.reg.Host + "/providers/v@" + d2
	f := newFixture(t, registry.WithOCIClient(env.client))
	ctx := context.Background()
	steps := []struct {
		source, version string
		do              func() error
	}{
		{"code", "v1", func() error { return f.reg.Register(ctx, "v", v1, nil) }},
		{"image:" + ref, "v2", func() error { return f.reg.RegisterImage(ctx, "v", registry.Image{Ref: ref}) }},
		{"fs:v.wasm", "v3", func() error { return f.reg.RegisterFS(ctx, fstest.MapFS{"v.wasm": {Data: v3}}, "v") }},
		{"image:" + ref, "v2", func() error { return f.reg.RegisterImage(ctx, "v", registry.Image{Ref: ref}) }},
		{"code", "v1", func() error { return f.reg.Register(ctx, "v", v1, nil) }},
	}
	for i, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("step %d (%s): %v", i, s.source, err)
		}
		if v, err := version(ctx, mustGet(t, f.reg, "v"), nil); err != nil || v != s.version {
			t.Fatalf("step %d (%s): %q, %v; want %s", i, s.source, v, err, s.version)
		}
		st := statusOf(t, f.reg, "v")
		wantImage := ""
		if strings.HasPrefix(s.source, "image:") {
			wantImage = ref
		}
		if st.Source != s.source || st.Image != wantImage {
			t.Fatalf("step %d: status = %+v, want source %s", i, st, s.source)
		}
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "d.wasm"), v1, 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "e.provider.yaml"), "image: "+ref+"\n")
	if err := f.reg.LoadDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"d", "e"} {
		before := env.reg.Requests()
		if err := f.reg.RegisterImage(ctx, name, registry.Image{Ref: ref}); !errors.Is(err, registry.ErrDuplicateProvider) {
			t.Fatalf("RegisterImage over directory provider %s: %v, want ErrDuplicateProvider", name, err)
		}
		if n := env.reg.Requests() - before; n != 0 {
			t.Fatalf("a refused name made %d registry requests", n)
		}
		if st := statusOf(t, f.reg, name); !st.Serving || st.Source == "image:"+ref {
			t.Fatalf("status of %s = %+v, want the directory's version serving", name, st)
		}
	}
	// A name code holds is refused to a directory.
	if err := f.reg.RegisterImage(ctx, "x", registry.Image{Ref: ref}); err != nil {
		t.Fatal(err)
	}
	dir2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir2, "x.wasm"), v1, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.LoadDir(ctx, dir2); !errors.Is(err, registry.ErrDuplicateProvider) {
		t.Fatalf("a directory over an image registered by code: %v, want ErrDuplicateProvider", err)
	}
	if v, err := version(ctx, mustGet(t, f.reg, "x"), nil); err != nil || v != "v2" {
		t.Fatalf("x: %q, %v; want v2 from the image", v, err)
	}
}

// Moving a registered image from digest A to digest B swaps under load:
// no call fails, and B serves.
func TestRegisterImageSwapsUnderLoad(t *testing.T) {
	env := newOCIEnv(t)
	v2 := guest(t, "v2", "")
	d1 := env.push(t, guest(t, "v1", ""), "providers/v:v1")
	d2 := env.push(t, v2, "providers/v:v2")
	f := newFixture(t, registry.WithOCIClient(env.client))
	ctx := context.Background()
	pol := parsePolicy(t, "poolSize: 4\n")
	if err := f.reg.RegisterImage(ctx, "v", registry.Image{Ref: env.reg.Host + "/providers/v@" + d1, Policy: pol}); err != nil {
		t.Fatal(err)
	}
	h := mustGet(t, f.reg, "v")
	precompile(t, f, v2)
	l := f.startLoad(t, h, 4)
	defer func() {
		if t.Failed() {
			t.Log(f.logs.String())
		}
	}()
	l.waitCalls(t, 21) // on v1
	from := f.ev.len()
	if err := f.reg.RegisterImage(ctx, "v", registry.Image{Ref: env.reg.Host + "/providers/v@" + d2, Policy: pol}); err != nil {
		t.Fatal(err)
	}
	_, ev := f.ev.wait(t, from, func(e registry.Event) bool { return e.Provider == "v" && e.Kind == registry.EventReloaded })
	l.waitSaw(t, "v2")
	l.waitCalls(t, 8) // and go on after the swap
	l.halt()
	l.noFailures(t)
	if ev.SHA256 != sum(v2) || !strings.HasSuffix(ev.Image, "@"+d2) {
		t.Fatalf("reloaded event = %+v, want module %s from %s", ev, sum(v2), d2)
	}
	if st := statusOf(t, f.reg, "v"); st.ImageDigest != d2 || st.SHA256 != sum(v2) || st.Draining > 1 {
		t.Fatalf("status = %+v, want %s", st, d2)
	}
}
