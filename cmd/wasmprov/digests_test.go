package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
)

// TestPushDigestLabels: a pushed module has two sha256 digests, the
// module file's (inspect, annotate, policies) and the manifest's (pull,
// pin). push prints the pinned reference alone on stdout, for scripts,
// and both digests labelled on stderr; inspect labels its digest as the
// file's, so that nobody pulls by it.
func TestPushDigestLabels(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	dir := t.TempDir()
	module := filepath.Join(dir, "m.wasm")
	minimal := filepath.Join(testguest.Root(), "runtime", "testdata", "abi", "minimal.wasm")
	if _, err := run(t, "annotate", minimal, "--name", "m", "--version", "0.1.0", "-o", module); err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(module)
	if err != nil {
		t.Fatal(err)
	}
	fileSum := sha256Hex(wasm)

	code, out, errOut := runCLI(t, "push", "--plain-http", "--store", filepath.Join(dir, "store"), module, reg.Host+"/providers/m:0.1.0")
	if code != 0 {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], reg.Host+"/providers/m@sha256:") {
		t.Fatalf("push's stdout is not the one pinned reference: %q", out)
	}
	manifest := lines[0][strings.Index(lines[0], "@")+1:]
	if manifest == "sha256:"+fileSum {
		t.Fatal("the manifest digest is the module's: the test cannot tell them apart")
	}
	for _, want := range []string{"manifest digest: " + manifest + " (pull and pin by this)", "module sha256:   " + fileSum + " (what inspect"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("push's stderr lacks %q:\n%s", want, errOut)
		}
	}

	text, err := run(t, "inspect", "-cache", "", module)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if want := "sha256:        " + fileSum + " (the module file's; not the OCI manifest digest"; !strings.Contains(text, want) {
		t.Errorf("inspect lacks %q:\n%s", want, text)
	}
}
