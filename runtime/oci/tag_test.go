package oci

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
)

// TestTag: a tag moved to a pushed manifest, by tag and by digest, names
// the same digest and sends no blob; a target in another repository, a
// digest target and a source the registry lacks are refused.
func TestTag(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	ctx := context.Background()
	c := newClient(t, Options{PlainHTTP: true})
	repo := reg.Host + "/p/tiny"
	d, err := c.Push(ctx, tiny, repo+":v1")
	if err != nil {
		t.Fatal(err)
	}
	before := reg.Requests()
	for _, tc := range []struct{ src, dst string }{{repo + ":v1", repo + ":stable"}, {repo + "@" + d.String(), repo + ":pinned"}} {
		got, err := c.Tag(ctx, tc.src, tc.dst)
		if err != nil || got != d {
			t.Fatalf("Tag %s %s: %s, %v; want %s", tc.src, tc.dst, got, err, d)
		}
		if now, err := c.Resolve(ctx, tc.dst); err != nil || now != d {
			t.Fatalf("%s resolves to %s, %v; want %s", tc.dst, now, err, d)
		}
	}
	for _, req := range reg.Served(before) {
		if strings.Contains(req, "/blobs/") {
			t.Errorf("tagging sent or read a blob: %s", req)
		}
	}

	if _, err := c.Tag(ctx, repo+":v1", reg.Host+"/p/other:v1"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "one repository") {
		t.Errorf("cross-repository tag: %v", err)
	}
	if _, err := c.Tag(ctx, repo+":v1", repo+"@"+d.String()); err == nil || !strings.Contains(err.Error(), "must name a tag") {
		t.Errorf("digest target: %v", err)
	}
	if _, err := c.Tag(ctx, repo+":nosuch", repo+":x"); !IsNotFound(err) {
		t.Errorf("missing source: %v; want not found", err)
	}
	if _, err := c.Resolve(ctx, repo+":x"); !IsNotFound(err) {
		t.Errorf("a failed tag left %s: %v", repo+":x", err)
	}
}
