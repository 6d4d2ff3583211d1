package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wasmprov/wasmprov/runtime/registry"
)

// TestImageLastKnownGood: a tag entry whose registry is down when the
// registry starts (a restart during an outage) serves the digest the tag
// last resolved to, from the store, marked stale with the reason; when
// the registry is back, a poll resolves the tag again, clears the
// staleness and converges on the tag's current digest, which moved
// during the outage.
func TestImageLastKnownGood(t *testing.T) {
	env := newOCIEnv(t)
	v1, v2 := guest(t, "v1", ""), guest(t, "v2", "")
	d1 := env.push(t, v1, "providers/v:stable")
	dir := t.TempDir()
	ref := env.reg.Host + "/providers/v:stable"
	writeFile(t, filepath.Join(dir, "v.provider.yaml"), "image: "+ref+"\n")
	ctx := context.Background()
	before := newFixture(t, registry.WithOCIClient(env.client))
	if err := before.reg.LoadDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if err := before.reg.Close(ctx); err != nil {
		t.Fatal(err)
	}
	d2 := env.push(t, v2, "providers/v:stable")
	env.reg.SetDown(true)

	// The restart: a new registry, a new client on the same store.
	f := newFixture(t, registry.WithOCIClient(ociClient(t, env.storeDir)), registry.WithImagePollInterval(pollEvery))
	precompile(t, f, v2)
	if err := f.reg.LoadDir(ctx, dir); err != nil {
		t.Fatalf("LoadDir during an outage, with a last known good: %v", err)
	}
	st := statusOf(t, f.reg, "v")
	if !st.Serving || !st.Stale || st.ImageDigest != d1 || st.SHA256 != sum(v1) ||
		!strings.Contains(st.StaleReason, "resolving the image") || st.StaleSince.IsZero() {
		t.Fatalf("status = %+v, want v1 (%s) serving, stale", st, d1)
	}
	h, err := f.reg.Get("v")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := version(ctx, h, nil); err != nil || v != "v1" {
		t.Fatalf("stale version answers %q, %v", v, err)
	}
	if !strings.Contains(f.logs.String(), "serving the last known good version") {
		t.Fatalf("staleness not logged:\n%s", f.logs.String())
	}
	if err := f.reg.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	// Still down: the poll fails, v1 serves, still stale.
	from := f.ev.len()
	f.clock.Step(pollEvery)
	f.ev.wait(t, from, func(e registry.Event) bool { return e.Provider == "v" && e.Kind == registry.EventRejected })
	if st := statusOf(t, f.reg, "v"); !st.Serving || !st.Stale || st.LastError == "" {
		t.Fatalf("status during the outage = %+v", st)
	}

	env.reg.SetDown(false)
	f.clock.Step(8 * pollEvery) // past any back-off
	waitServing(t, f, "v", sum(v2))
	if st := statusOf(t, f.reg, "v"); st.Stale || st.ImageDigest != d2 || st.LastError != "" || st.StaleReason != "" {
		t.Fatalf("status after the outage = %+v, want v2 (%s), not stale, no error standing", st, d2)
	}
}

// TestImageNoLastKnownGood: with nothing resolved before, an outage at
// start leaves the name configured but not serving, and Get says so,
// with the reason, distinctly from a name nobody configured.
func TestImageNoLastKnownGood(t *testing.T) {
	env := newOCIEnv(t)
	env.push(t, guest(t, "v1", ""), "providers/v:stable")
	env.reg.SetDown(true)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "v.provider.yaml"), "image: "+env.reg.Host+"/providers/v:stable\n")
	f := newFixture(t, registry.WithOCIClient(env.client))
	if err := f.reg.LoadDir(context.Background(), dir); err == nil {
		t.Fatal("LoadDir with the registry down and nothing resolved before succeeded")
	}
	_, err := f.reg.Get("v")
	if !errors.Is(err, registry.ErrNotServing) || !errors.Is(err, registry.ErrProviderNotFound) ||
		!strings.Contains(err.Error(), "resolving the image") || strings.Count(err.Error(), `"v"`) != 1 {
		t.Fatalf("Get of a configured provider that failed to load: %v", err)
	}
	if _, err := f.reg.Get("nobody"); !errors.Is(err, registry.ErrProviderNotFound) || errors.Is(err, registry.ErrNotServing) {
		t.Fatalf("Get of an unknown name: %v", err)
	}
	if st := statusOf(t, f.reg, "v"); st.Serving || st.Stale || st.LastError == "" {
		t.Fatalf("status = %+v", st)
	}
}

// TestImageVerifyBlockCheckedAtParse: a verify block the check refuses is
// an invalid entry, said before anything is pulled: no request reaches
// the registry and the verifier is never asked.
func TestImageVerifyBlockCheckedAtParse(t *testing.T) {
	env := newOCIEnv(t)
	env.push(t, guest(t, "v1", ""), "providers/v:stable")
	dir := t.TempDir()
	entry := filepath.Join(dir, "v.provider.yaml")
	writeFile(t, entry, "image: "+env.reg.Host+"/providers/v:stable\nverify: {key: cosign.pub}\n")
	asked := 0
	var checked []string
	f := newFixture(t, registry.WithOCIClient(env.client),
		registry.WithVerifier(func(context.Context, registry.VerifyRequest) error { asked++; return nil }),
		registry.WithVerifyCheck(func(verify json.RawMessage, path string) error {
			checked = append(checked, path)
			if strings.Contains(string(verify), `"key"`) {
				return errors.New(`unknown field "key"`)
			}
			return nil
		}))
	before := env.reg.Requests()
	err := f.reg.LoadDir(context.Background(), dir)
	ve := versionErr(t, err, registry.StageVerify)
	if !errors.Is(ve, registry.ErrInvalidImage) || !strings.Contains(err.Error(), `verify: unknown field "key"`) {
		t.Fatalf("LoadDir = %v, want an invalid entry naming the field", err)
	}
	if n := env.reg.Requests() - before; n != 0 || asked != 0 {
		t.Fatalf("%d registry requests and %d verifications for an invalid entry", n, asked)
	}
	if len(checked) != 1 || checked[0] != entry {
		t.Fatalf("checked %q, want the entry's path", checked)
	}
}

// TestImageUnsignedTagWarnsOnce: the promotion mistake — a watched tag
// moved to a digest that is not signed yet — is logged once, at WARN
// (the previous version serves: nothing is lost), counted at every
// retry, retried with back-off, and served once it is signed.
func TestImageUnsignedTagWarnsOnce(t *testing.T) {
	env := newOCIEnv(t)
	v1, v2 := guest(t, "v1", ""), guest(t, "v2", "")
	d1 := env.push(t, v1, "providers/v:stable")
	var mu sync.Mutex
	signed := map[string]bool{d1: true}
	verifier := func(_ context.Context, req registry.VerifyRequest) error {
		mu.Lock()
		defer mu.Unlock()
		if !signed[req.Digest] {
			return errors.New("not signed: no Sigstore bundle is attached to " + req.Digest)
		}
		return nil
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "v.provider.yaml"), "image: "+env.reg.Host+"/providers/v:stable\nverify: {anyOf: [{publicKeyFile: k.pub}]}\n")
	f := newFixture(t, registry.WithOCIClient(env.client), registry.WithVerifier(verifier), registry.WithImagePollInterval(pollEvery))
	ctx := context.Background()
	if err := f.reg.LoadDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	precompile(t, f, v2)
	d2 := env.push(t, v2, "providers/v:stable")
	for range 3 {
		from := f.ev.len()
		f.clock.Step(8 * pollEvery)
		_, ev := f.ev.wait(t, from, func(e registry.Event) bool { return e.Provider == "v" && e.Kind == registry.EventRejected })
		if !errors.Is(ev.Err, registry.ErrVerification) || ev.OldSHA256 != sum(v1) {
			t.Fatalf("rejected = %+v, want a verification failure with v1 serving", ev)
		}
	}
	logs := f.logs.String()
	if n := strings.Count(logs, `msg="provider version rejected`); n != 1 || !strings.Contains(logs, `level=WARN msg="provider version rejected; the previous version keeps serving"`) {
		t.Fatalf("%d rejection lines, want 1 at WARN:\n%s", n, logs)
	}
	if st := statusOf(t, f.reg, "v"); st.VerificationsFailed != 3 || st.ReloadsFailed != 3 || !strings.Contains(st.LastError, d2) || st.Stale {
		t.Fatalf("status = %+v", st)
	}
	mu.Lock()
	signed[d2] = true
	mu.Unlock()
	f.clock.Step(8 * pollEvery)
	waitServing(t, f, "v", sum(v2))
	if st := statusOf(t, f.reg, "v"); st.LastError != "" || st.ImageDigest != d2 {
		t.Fatalf("status once signed = %+v", st)
	}
}
