package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
	"github.com/wasmprov/wasmprov/runtime/metadata"
)

// tiny is a valid module (one type), for the tests that need no provider.
var tiny = []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00")

func newClient(t *testing.T, o Options) *Client {
	t.Helper()
	if o.DockerConfig == "" {
		o.DockerConfig = filepath.Join(t.TempDir(), "none.json") // not the user's
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := OpenStore(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storeBlobs lists what the store holds, temporary files included.
func storeBlobs(t *testing.T, s *Store) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(s.Dir(), "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestPushPullTLSAuth: a real provider, annotated, through a registry
// with TLS (a CA made here) and basic auth (from a Docker config.json):
// the manifest has the TAG-Runtime layout and the metadata as
// annotations; a tag pull resolves and logs the digest; a digest pull
// from the store asks the registry nothing.
func TestPushPullTLSAuth(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{User: "alice", Password: "s3cret", TLS: true})
	wasm, err := os.ReadFile(testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	wasm, err = metadata.Write(wasm, &metadata.Metadata{Name: "fake", Version: "1.0.0", Description: "the fake provider",
		Source: "https://example.com/wasmprov", License: "Apache-2.0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfgFile := testregistry.DockerConfig(t, reg.Host, "alice", "s3cret")
	ref := reg.Host + "/providers/fake:1.0.0"

	c := newClient(t, Options{DockerConfig: cfgFile, RootCAs: reg.CAPool, Store: newStore(t)})
	d, err := c.Push(ctx, wasm, ref)
	if err != nil {
		t.Fatal(err)
	}
	// Pushing the same module again gives the same digest.
	if d2, err := c.Push(ctx, wasm, ref); err != nil || d2 != d {
		t.Fatalf("second push: %s, %v; want %s", d2, err, d)
	}

	// The manifest as the registry serves it.
	repo, _ := remote.NewRepository(reg.Host + "/providers/fake")
	repo.Client = c.http // no credentials: anonymous must fail first
	if _, err := repo.Resolve(ctx, "1.0.0"); err == nil {
		t.Fatal("the registry served the manifest without credentials")
	}
	var logs bytes.Buffer
	c2 := newClient(t, Options{DockerConfig: cfgFile, RootCAs: reg.CAPool, Store: newStore(t), Logger: logTo(&logs)})
	a, err := c2.Pull(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Wasm, wasm) || a.Digest != d || a.Ref != reg.Host+"/providers/fake@"+d.String() {
		t.Fatalf("pulled %d bytes, digest %s, ref %s; want %d bytes, %s", len(a.Wasm), a.Digest, a.Ref, len(wasm), d)
	}
	if !strings.Contains(logs.String(), "resolved tag") || !strings.Contains(logs.String(), d.String()) {
		t.Fatalf("the tag's digest was not logged: %s", logs.String())
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(a.manifest, &m); err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != MediaTypeConfig || len(m.Layers) != 1 || m.Layers[0].MediaType != MediaTypeLayer {
		t.Fatalf("manifest layout: %s", a.manifest)
	}
	for k, v := range map[string]string{
		ocispec.AnnotationTitle: "fake", ocispec.AnnotationVersion: "1.0.0", ocispec.AnnotationDescription: "the fake provider",
		ocispec.AnnotationSource: "https://example.com/wasmprov", ocispec.AnnotationLicenses: "Apache-2.0",
	} {
		if m.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, m.Annotations[k], v)
		}
	}
	if got, err := c2.Resolve(ctx, ref); err != nil || got != d {
		t.Fatalf("Resolve = %s, %v", got, err)
	}

	// Pinned: by digest, from the store, no request at all.
	before := reg.Requests()
	a2, err := c2.Pull(ctx, a.Ref)
	if err != nil || !bytes.Equal(a2.Wasm, wasm) {
		t.Fatalf("pull by digest: %v", err)
	}
	if n := reg.Requests() - before; n != 0 {
		t.Fatalf("a pull of a stored digest made %d registry requests", n)
	}

	// Wrong password, no CA.
	bad := newClient(t, Options{DockerConfig: testregistry.DockerConfig(t, reg.Host, "alice", "wrong"), RootCAs: reg.CAPool})
	if _, err := bad.Pull(ctx, ref); err == nil || !strings.Contains(err.Error(), ref) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong password: %v", err)
	}
	noCA := newClient(t, Options{DockerConfig: cfgFile})
	if _, err := noCA.Pull(ctx, ref); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted CA: %v", err)
	}
	// The CA from a PEM file, as the CLI reads it.
	pool, err := LoadCAFile(reg.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newClient(t, Options{DockerConfig: cfgFile, RootCAs: pool}).Resolve(ctx, ref); err != nil {
		t.Fatalf("CA from file: %v", err)
	}
}

// pushRaw pushes an artifact with the given layers (media type, content)
// straight through oras, bypassing Push's checks.
func pushRaw(t *testing.T, host, repoName, tag string, layers ...[2]string) {
	t.Helper()
	ctx := context.Background()
	repo, err := remote.NewRepository(host + "/" + repoName)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	push := func(mt string, b []byte) ocispec.Descriptor {
		d := ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
		if err := repo.Push(ctx, d, bytes.NewReader(b)); err != nil && !strings.Contains(err.Error(), "exists") {
			t.Fatal(err)
		}
		return d
	}
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: push(MediaTypeConfig, []byte("{}"))}
	m.SchemaVersion = 2
	for _, l := range layers {
		m.Layers = append(m.Layers, push(l[0], []byte(l[1])))
	}
	raw, _ := json.Marshal(m)
	if err := repo.PushReference(ctx, ocispec.Descriptor{MediaType: m.MediaType, Digest: digest.FromBytes(raw), Size: int64(len(raw))}, bytes.NewReader(raw), tag); err != nil {
		t.Fatal(err)
	}
}

// pushIndex pushes an image index whose one entry is a Wasm artifact.
func pushIndex(t *testing.T, host, repoName, tag string) {
	t.Helper()
	pushRaw(t, host, repoName, "inner", [2]string{MediaTypeLayer, string(tiny)})
	repo, _ := remote.NewRepository(host + "/" + repoName)
	repo.PlainHTTP = true
	inner, err := repo.Resolve(context.Background(), "inner")
	if err != nil {
		t.Fatal(err)
	}
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{inner}}
	idx.SchemaVersion = 2
	raw, _ := json.Marshal(idx)
	desc := ocispec.Descriptor{MediaType: idx.MediaType, Digest: digest.FromBytes(raw), Size: int64(len(raw))}
	if err := repo.PushReference(context.Background(), desc, bytes.NewReader(raw), tag); err != nil {
		t.Fatal(err)
	}
}

// TestPullRefusesArtifacts: what is not one Wasm module is refused with
// the ref and the reason, and nothing of it is stored; the legacy layer
// media type is accepted.
func TestPullRefusesArtifacts(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	ctx := context.Background()
	pushRaw(t, reg.Host, "x/image", "v1", [2]string{"application/vnd.oci.image.layer.v1.tar+gzip", "not wasm"})
	pushRaw(t, reg.Host, "x/two", "v1", [2]string{MediaTypeLayer, string(tiny)}, [2]string{MediaTypeLayer, string(tiny) + "\x00\x01\x00"})
	pushRaw(t, reg.Host, "x/fakewasm", "v1", [2]string{MediaTypeLayer, "#!/bin/sh"})
	pushRaw(t, reg.Host, "x/legacy", "v1", [2]string{MediaTypeLayerLegacy, string(tiny)})
	big, err := metadata.Write(tiny, &metadata.Metadata{Name: "big", Description: strings.Repeat("x", 4096)})
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(t)
	c := newClient(t, Options{PlainHTTP: true, Store: s})
	if _, err := c.Push(ctx, big, reg.Host+"/x/big:v1"); err != nil {
		t.Fatal(err)
	}
	s.GC() // nothing referenced is collected
	for _, d := range storeBlobs(t, s) {
		os.Remove(filepath.Join(s.Dir(), "blobs", "sha256", d))
	}
	// An image index (what a multi-platform image is) over a Wasm
	// artifact: not itself a module.
	pushIndex(t, reg.Host, "x/index", "v1")
	small := newClient(t, Options{PlainHTTP: true, Store: s, MaxBlobSize: 1024})
	for name, tc := range map[string]struct {
		c    *Client
		ref  string
		want string
	}{
		"image":      {c, reg.Host + "/x/image:v1", `not a Wasm artifact: its layer is "application/vnd.oci.image.layer.v1.tar+gzip"`},
		"two layers": {c, reg.Host + "/x/two:v1", "this manifest has 2"},
		"not wasm":   {c, reg.Host + "/x/fakewasm:v1", "not a WebAssembly module"},
		"over cap":   {small, reg.Host + "/x/big:v1", "over the limit of 1024"},
		"missing":    {c, reg.Host + "/x/none:v1", "not found"},
		"index":      {c, reg.Host + "/x/index:v1", `the manifest is "application/vnd.oci.image.index.v1+json"`},
	} {
		_, err := tc.c.Pull(ctx, tc.ref)
		if err == nil || !strings.Contains(err.Error(), tc.ref) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Pull = %v; want an error naming %s and %q", name, err, tc.ref, tc.want)
		}
		if left := storeBlobs(t, s); len(left) != 0 {
			t.Errorf("%s: the store holds %v", name, left)
		}
	}
	a, err := c.Pull(ctx, reg.Host+"/x/legacy:v1")
	if err != nil || !bytes.Equal(a.Wasm, tiny) {
		t.Fatalf("legacy media type: %v", err)
	}
	// Plain HTTP to anything but loopback is refused before any request.
	if _, err := c.Pull(ctx, "registry.example.com/x/legacy:v1"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "only a loopback registry") {
		t.Fatalf("plain HTTP to a remote registry: %v", err)
	}
	if _, err := c.Push(ctx, []byte("MZ"), reg.Host+"/x/exe:v1"); err == nil || !strings.Contains(err.Error(), "not a WebAssembly module") {
		t.Fatalf("pushing a non-module: %v", err)
	}
}

// faultyProxy stands in front of a real registry and misbehaves on blob
// downloads (the mode) or on everything ("500").
func faultyProxy(t *testing.T, upstream string, mode string) string {
	t.Helper()
	other := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(other.Close)
	target, _ := url.Parse("http://" + upstream)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		blob := strings.Contains(r.URL.Path, "/blobs/sha256:") && r.Method == http.MethodGet
		switch {
		case mode == "500":
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		case mode == "redirect" && blob:
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
			return
		case mode == "slow" && blob:
			select {
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
			}
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, target.String()+r.URL.RequestURI(), r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		body, _ := io.ReadAll(resp.Body)
		if mode == "corrupt" && blob && len(body) > 8 {
			body[len(body)-1] ^= 0xff // same length, other content
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestPullRefusesFaultyRegistry: a 500, a redirect to another host, a
// registry too slow, a blob whose content does not match its digest:
// each an error naming the ref and the reason, nothing in the store.
func TestPullRefusesFaultyRegistry(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	ctx := context.Background()
	if _, err := newClient(t, Options{PlainHTTP: true}).Push(ctx, tiny, reg.Host+"/p/tiny:v1"); err != nil {
		t.Fatal(err)
	}
	for mode, want := range map[string]string{
		"500":      "500",
		"redirect": "redirected to another host",
		"slow":     "Timeout",
		"corrupt":  "does not match its descriptor",
	} {
		host := faultyProxy(t, reg.Host, mode)
		s := newStore(t)
		c := newClient(t, Options{PlainHTTP: true, Store: s, Timeout: 500 * time.Millisecond})
		ref := host + "/p/tiny:v1"
		start := time.Now()
		_, err := c.Pull(ctx, ref)
		if err == nil || !strings.Contains(err.Error(), ref) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Pull = %v; want an error naming %s and %q", mode, err, ref, want)
		}
		if d := time.Since(start); d > 2500*time.Millisecond {
			t.Errorf("%s: took %v", mode, d)
		}
		if left := storeBlobs(t, s); len(left) != 0 {
			t.Errorf("%s: the store holds %v", mode, left)
		}
	}
	// A redirect to a host the client allows is followed (and the content
	// still verified): here the other host is the registry itself.
	c := newClient(t, Options{PlainHTTP: true, RedirectHosts: []string{reg.Host}})
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+reg.Host+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	if _, err := c.Pull(ctx, strings.TrimPrefix(redirecting.URL, "http://")+"/p/tiny:v1"); err != nil {
		t.Fatalf("allowed redirect: %v", err)
	}
}

func logTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
