package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
)

// TestStoreCommands: store ls lists what push put in the store (manifest
// digest, title, version, module sha256), -q the digests only; store rm
// refuses a module's sha256 naming its manifest, removes the manifest,
// after which ls no longer shows it and an offline pull by its digest
// misses the store.
func TestStoreCommands(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	dir := t.TempDir()
	store := []string{"--store", filepath.Join(dir, "store")}
	if code, out, _ := runCLI(t, append([]string{"store", "ls"}, store...)...); code != 0 || strings.Count(out, "\n") != 1 {
		t.Fatalf("ls of an empty store: exit %d\n%s", code, out)
	}
	annotated := filepath.Join(dir, "fake.wasm")
	if code, _, errOut := runCLI(t, "annotate", testguest.Build(t, "examples/fake"), "--name", "fake", "--version", "0.3.0", "--abi-version", "1", "--capabilities", "log", "-o", annotated); code != 0 {
		t.Fatal(errOut)
	}
	wasm, _ := os.ReadFile(annotated)
	code, out, errOut := runCLI(t, append([]string{"push", annotated, reg.Host + "/providers/fake:0.3.0", "--plain-http"}, store...)...)
	if code != 0 {
		t.Fatal(errOut)
	}
	pinned := strings.TrimSpace(out)
	manifest := pinned[strings.Index(pinned, "@")+1:]
	module := "sha256:" + sha256Hex(wasm)

	code, out, errOut = runCLI(t, append([]string{"store", "ls"}, store...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "MANIFEST DIGEST") {
		t.Fatalf("store ls: exit %d\n%s%s", code, out, errOut)
	}
	// digest, title, version, module, size (number and unit), referrers, date, time
	if f := strings.Fields(lines[1]); len(f) != 9 || f[0] != manifest || f[1] != "fake" || f[2] != "0.3.0" || f[3] != module || f[6] != "0" {
		t.Errorf("store ls line %q; want %s fake 0.3.0 %s, a size, 0 referrers and a time", lines[1], manifest, module)
	}
	if code, out, _ := runCLI(t, append([]string{"store", "ls", "-q"}, store...)...); code != 0 || out != manifest+"\n" {
		t.Errorf("store ls -q: %q", out)
	}

	code, _, errOut = runCLI(t, append([]string{"store", "rm", module}, store...)...)
	if code == 0 || !strings.Contains(errOut, "not a manifest") || !strings.Contains(errOut, manifest) {
		t.Errorf("store rm of the module's sha256: exit %d\n%s", code, errOut)
	}
	code, out, errOut = runCLI(t, append([]string{"store", "rm", pinned}, store...)...)
	if code != 0 || out != "removed "+manifest+"\n" {
		t.Fatalf("store rm: exit %d, %q\n%s", code, out, errOut)
	}
	if code, out, _ := runCLI(t, append([]string{"store", "ls", "-q"}, store...)...); code != 0 || out != "" {
		t.Errorf("store ls after rm: %q", out)
	}
	reg.Server.Close()
	if code, _, _ := runCLI(t, append([]string{"pull", pinned, "-o", filepath.Join(dir, "x.wasm"), "--plain-http"}, store...)...); code == 0 {
		t.Error("the removed artifact was still served from the store")
	}
	if code, _, errOut := runCLI(t, "store", "frob"); code == 0 || !strings.Contains(errOut, "want ls or rm") {
		t.Errorf("store frob: exit %d\n%s", code, errOut)
	}
}
