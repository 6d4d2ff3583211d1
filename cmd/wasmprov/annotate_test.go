package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime/metadata"
)

// TestAnnotate: annotate writes metadata read from flags and the module
// (ABI version, capabilities), inspect shows it, and annotating again
// changes only the fields given.
func TestAnnotate(t *testing.T) {
	fake := testguest.Build(t, "examples/fake")
	out := filepath.Join(t.TempDir(), "fake.wasm")
	if _, err := run(t, "annotate", fake, "--name", "fake", "--version", "1.2.0", "--min-host-version", "0.1.0",
		"--allowed-host", "api.example.com", "--license", "Apache-2.0", "-o", out); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	md, err := metadata.Read(b)
	if err != nil || md == nil {
		t.Fatalf("metadata.Read = %v, %v", md, err)
	}
	if md.ABIVersion != 1 || strings.Join(md.Capabilities, ",") != "log" || md.Policy.AllowedHosts[0] != "api.example.com" {
		t.Fatalf("metadata %+v", md)
	}
	text, err := run(t, "inspect", "-cache", testguest.CompilationCacheDir(t), out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name:             fake", "version:          1.2.0", "min host version: 0.1.0", "license:          Apache-2.0", "valid:         yes"} {
		if !strings.Contains(text, want) {
			t.Errorf("inspect lacks %q:\n%s", want, text)
		}
	}
	// Again, in place, only the version; a minimum host from the future
	// makes inspect fail.
	if _, err := run(t, "annotate", out, "--version", "1.3.0", "--min-host-version", "99.0.0", "-o", out); err != nil {
		t.Fatal(err)
	}
	b2, _ := os.ReadFile(out)
	md2, _ := metadata.Read(b2)
	if md2.Version != "1.3.0" || md2.License != "Apache-2.0" || md2.Name != "fake" {
		t.Fatalf("re-annotated: %+v", md2)
	}
	orig, _ := os.ReadFile(fake)
	if !bytes.Equal(b2[:len(orig)], orig) {
		t.Fatal("re-annotating changed more than the metadata section")
	}
	text, err = run(t, "inspect", "-cache", testguest.CompilationCacheDir(t), out)
	if err == nil || !strings.Contains(text, "needs host version 99.0.0 or newer") {
		t.Fatalf("inspect of a module for a newer host: %v\n%s", err, text)
	}
	if _, err := run(t, "annotate", fake, "-o", out); err == nil || !strings.Contains(err.Error(), "no name") {
		t.Fatalf("annotating without a name: %v", err)
	}
}
