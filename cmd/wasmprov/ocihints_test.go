package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
	"github.com/wasmprov/wasmprov/runtime/oci"
)

// TestOCIHints: each error whose fix is a flag or a command away names
// it: a plain-HTTP registry (--plain-http), a private CA (--ca-file), a
// module over the limit (--max-module-bytes), a registry that wants
// credentials (wasmprov login HOST: TestLoginLogout), and a pull by the
// module's sha256 instead of the manifest digest. The hint keeps the
// error: errors.Is still sees through it.
func TestOCIHints(t *testing.T) {
	plain := testregistry.Start(t, testregistry.Options{})
	tlsReg := testregistry.Start(t, testregistry.Options{TLS: true})
	dir := t.TempDir()
	store := []string{"--store", filepath.Join(dir, "store")}
	fake := testguest.Build(t, "examples/fake")
	out := filepath.Join(dir, "out.wasm")

	code, pushed, errOut := runCLI(t, append([]string{"push", fake, plain.Host + "/p/fake:1", "--plain-http"}, store...)...)
	if code != 0 {
		t.Fatal(errOut)
	}
	if code, _, errOut := runCLI(t, append([]string{"push", fake, tlsReg.Host + "/p/fake:1", "--ca-file", tlsReg.CAFile}, store...)...); code != 0 {
		t.Fatal(errOut)
	}
	fresh := []string{"--store", filepath.Join(dir, "fresh")} // nothing served from a store

	for _, tc := range []struct {
		name string
		args []string
		hint string
	}{
		{"plain HTTP registry", []string{"pull", plain.Host + "/p/fake:1", "-o", out}, "hint: the registry at " + plain.Host + " speaks plain HTTP: add --plain-http"},
		{"private CA", []string{"pull", tlsReg.Host + "/p/fake:1", "-o", out}, "hint: the registry's certificate is signed by a CA this machine does not trust: add --ca-file"},
		{"module over the limit", []string{"pull", plain.Host + "/p/fake:1", "-o", out, "--plain-http", "--max-module-bytes", "1000"}, "raise --max-module-bytes"},
		{"module sha256 for a manifest digest", []string{"pull", plain.Host + "/p/fake@sha256:" + sha256HexFile(t, fake), "-o", out, "--plain-http"},
			"the module's sha256 (what inspect, annotate and policy pins show) is another digest"},
	} {
		code, _, errOut := runCLI(t, append(tc.args, fresh...)...)
		if code == 0 || !strings.Contains(errOut, tc.hint) {
			t.Errorf("%s: exit %d, want the hint %q:\n%s", tc.name, code, tc.hint, errOut)
		}
	}
	// The pinned manifest digest, pulled the same way, is found: the hint
	// is not given for what works.
	if code, _, errOut := runCLI(t, append([]string{"pull", strings.TrimSpace(pushed), "-o", out, "--plain-http"}, fresh...)...); code != 0 {
		t.Errorf("pull by the manifest digest: %s", errOut)
	}

	err := hinted(oci.ErrRefused, nil)
	if !errors.Is(err, oci.ErrRefused) {
		t.Errorf("hinted lost the error: %v", err)
	}
	tooBig := hinted(errors.Join(oci.ErrRefused, errors.New("the module is 5 bytes, over the limit of 4")), nil)
	if !errors.Is(tooBig, oci.ErrRefused) || !strings.Contains(tooBig.Error(), "\nhint: ") {
		t.Errorf("a hinted error: %v", tooBig)
	}
}

func sha256HexFile(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return sha256Hex(b)
}
