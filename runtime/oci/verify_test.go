package oci

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
)

// TestPullVerifyHook: a module Options.Verify refuses is not returned
// and leaves nothing in the store; one it accepts is returned and stored;
// an artifact already in the store is still asked about, without a
// shortcut.
func TestPullVerifyHook(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	ctx := context.Background()
	ref := reg.Host + "/providers/tiny:1"
	d, err := newClient(t, Options{PlainHTTP: true}).Push(ctx, tiny, ref)
	if err != nil {
		t.Fatal(err)
	}
	var asked []digest.Digest
	refuse := func(_ context.Context, c *Client, a *Artifact) error {
		asked = append(asked, a.Digest)
		if c == nil || !strings.Contains(a.Ref, "@"+d.String()) {
			t.Errorf("hook called with client %v, ref %q", c, a.Ref)
		}
		return errors.New("no signature I like")
	}
	s := newStore(t)
	c := newClient(t, Options{PlainHTTP: true, Store: s, Verify: refuse})
	if _, err := c.Pull(ctx, ref); !errors.Is(err, ErrUnverified) || !strings.Contains(err.Error(), "no signature I like") {
		t.Fatalf("refused pull: %v", err)
	}
	if blobs := storeBlobs(t, s); len(blobs) != 0 {
		t.Fatalf("a refused artifact left %v in the store", blobs)
	}
	accept := func(_ context.Context, _ *Client, a *Artifact) error { asked = append(asked, a.Digest); return nil }
	a, err := newClient(t, Options{PlainHTTP: true, Store: s, Verify: accept}).Pull(ctx, ref)
	if err != nil || a.Digest != d {
		t.Fatalf("accepted pull: %v, %v", a, err)
	}
	if len(storeBlobs(t, s)) != 3 {
		t.Fatalf("accepted pull stored %v", storeBlobs(t, s))
	}
	// From the store, by digest: still refused.
	if _, err := c.Pull(ctx, reg.Host+"/providers/tiny@"+d.String()); !errors.Is(err, ErrUnverified) {
		t.Fatalf("refused pull from the store: %v", err)
	}
	if !slices.Equal(asked, []digest.Digest{d, d, d}) {
		t.Fatalf("hook asked about %v, want %s three times", asked, d)
	}
}

// TestAttachReferrers: a blob attached to an artifact is listed by
// Referrers. distribution v3.1.2 has no referrers API (GET
// /v2/<name>/referrers/<digest> is a 404) and sends no OCI-Subject
// header, so oras-go keeps the tag-schema index (sha256-<hex>) on push,
// and Referrers asks the API first, then reads that index; with
// NoReferrersAPI it never asks the API.
func TestAttachReferrers(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		t.Run(map[bool]string{false: "api", true: "tag-schema"}[fallback], func(t *testing.T) {
			reg := testregistry.Start(t, testregistry.Options{})
			ctx := context.Background()
			var paths []string
			rec := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				paths = append(paths, r.Method+" "+r.URL.Path)
				return http.DefaultTransport.RoundTrip(r)
			})
			c := newClient(t, Options{PlainHTTP: true, NoReferrersAPI: fallback, Transport: rec})
			ref := reg.Host + "/providers/tiny:1"
			d, err := c.Push(ctx, tiny, ref)
			if err != nil {
				t.Fatal(err)
			}
			const at = "application/vnd.example.note+json"
			rd, err := c.Attach(ctx, ref, at, at, []byte(`{"hello":1}`))
			if err != nil {
				t.Fatal(err)
			}
			if _, err = c.Resolve(ctx, reg.Host+"/providers/tiny:sha256-"+d.Encoded()); err != nil {
				t.Fatalf("no sha256-<hex> tag: %v", err)
			}
			paths = nil
			refs, subject, err := c.Referrers(ctx, ref, at)
			if err != nil || subject != d {
				t.Fatalf("referrers: %v (subject %s, want %s)", err, subject, d)
			}
			if len(refs) != 1 || refs[0].Digest != rd || string(refs[0].Data) != `{"hello":1}` || refs[0].ArtifactType != at {
				t.Fatalf("referrers = %+v", refs)
			}
			api := slices.ContainsFunc(paths, func(p string) bool { return strings.Contains(p, "/referrers/") })
			tag := slices.Contains(paths, "GET /v2/providers/tiny/manifests/sha256-"+d.Encoded())
			if api == fallback || !tag {
				t.Fatalf("fallback %v: asked the referrers API %v, fetched the tag index %v: %v", fallback, api, tag, paths)
			}
			if other, _, err := c.Referrers(ctx, ref, "application/other"); err != nil || len(other) != 0 {
				t.Fatalf("referrers of another type: %v, %v", other, err)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
