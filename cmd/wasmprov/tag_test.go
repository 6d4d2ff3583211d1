package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
)

// TestTagCommand: tag by a bare tag and by a full reference, from a tag
// and from a digest, points the new tag at the pushed digest, uploading
// no blob; another repository is refused, saying why.
func TestTagCommand(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	common := []string{"--plain-http", "--store", filepath.Join(t.TempDir(), "store")}
	repo := reg.Host + "/providers/fake"
	code, out, errOut := runCLI(t, append([]string{"push", testguest.Build(t, "examples/fake"), repo + ":1.0.0"}, common...)...)
	if code != 0 {
		t.Fatal(errOut)
	}
	d := strings.TrimSpace(out)[len(repo)+1:]
	before := reg.Requests()
	for _, tc := range []struct{ src, dst, tag string }{
		{repo + ":1.0.0", "stable", repo + ":stable"},
		{repo + "@" + d, repo + ":pinned", repo + ":pinned"},
	} {
		code, out, errOut := runCLI(t, append([]string{"tag", tc.src, tc.dst}, common...)...)
		if code != 0 || out != tc.tag+"@"+d+"\n" {
			t.Fatalf("tag %s %s: exit %d, %q\n%s", tc.src, tc.dst, code, out, errOut)
		}
		if code, out, _ := runCLI(t, append([]string{"digest", tc.tag}, common...)...); code != 0 || out != d+"\n" {
			t.Fatalf("%s now names %q, want %s", tc.tag, out, d)
		}
	}
	for _, req := range reg.Served(before) {
		if strings.Contains(req, "/blobs/") {
			t.Errorf("tag touched a blob: %s", req)
		}
	}
	code, _, errOut = runCLI(t, append([]string{"tag", repo + ":1.0.0", reg.Host + "/other/fake:1.0.0"}, common...)...)
	if code == 0 || !strings.Contains(errOut, "a tag points within one repository") {
		t.Errorf("cross-repository tag: exit %d\n%s", code, errOut)
	}
}
