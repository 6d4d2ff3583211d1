package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
)

// TestDiscover: an unsigned artifact has no referrers; after sign, with
// the referrers API and with the tag schema, discover lists the
// signature sign printed, with its artifact type; an --artifact-type
// filter that matches nothing lists none.
func TestDiscover(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	dir := t.TempDir()
	key := filepath.Join(dir, "k")
	if code, _, errOut := runCLI(t, "keygen", "-o", key); code != 0 {
		t.Fatal(errOut)
	}
	fake := testguest.Build(t, "examples/fake")
	for _, fallback := range []bool{false, true} {
		common := []string{"--plain-http", "--store", filepath.Join(dir, "store")}
		ref := reg.Host + "/providers/fake:1"
		push := append([]string{"push", fake, ref}, common...)
		if fallback {
			ref = reg.Host + "/providers/fake-tags:1"
			push = append([]string{"push", fake, ref}, common...)
			common = append(common, "--no-referrers-api")
		}
		code, out, errOut := runCLI(t, push...)
		if code != 0 {
			t.Fatal(errOut)
		}
		pinned := strings.TrimSpace(out)
		if code, out, errOut := runCLI(t, append([]string{"discover", ref}, common...)...); code != 0 || out != pinned+"\n(no referrers)\n" {
			t.Fatalf("discover unsigned: exit %d, %q\n%s", code, out, errOut)
		}
		code, out, errOut = runCLI(t, append([]string{"sign", "--key", key, ref}, common...)...)
		if code != 0 {
			t.Fatal(errOut)
		}
		sig := out[strings.LastIndex(out, "@")+1 : strings.LastIndex(out, " (key")]
		code, out, errOut = runCLI(t, append([]string{"discover", ref}, common...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 3 || lines[0] != pinned {
			t.Fatalf("discover signed (fallback %t): exit %d\n%s%s", fallback, code, out, errOut)
		}
		if f := strings.Fields(lines[2]); len(f) != 3 || f[0] != sig || f[1] != "application/vnd.dev.sigstore.bundle.v0.3+json" {
			t.Errorf("referrer line %q; want %s and the bundle type", lines[2], sig)
		}
		code, out, _ = runCLI(t, append([]string{"discover", ref, "--artifact-type", "application/spdx+json"}, common...)...)
		if code != 0 || !strings.HasSuffix(out, "(no referrers)\n") {
			t.Errorf("discover --artifact-type with no match: %q", out)
		}
	}
}
