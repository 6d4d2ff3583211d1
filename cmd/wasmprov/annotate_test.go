package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime"
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

// Changing only metadata fields of an annotated module keeps the ABI
// version and capabilities its metadata states: no compile (counted at the
// one place annotate compiles), and every byte but the metadata section
// kept. Without metadata, or with -reread, the module is compiled, and
// stderr says so before and how long it took after.
func TestAnnotateReusesMetadata(t *testing.T) {
	compiles := 0
	saved := inspectByRunning
	inspectByRunning = func(ctx context.Context, rt *runtime.Runtime, wasm []byte) (*runtime.ModuleInfo, error) {
		compiles++
		return saved(ctx, rt, wasm)
	}
	defer func() { inspectByRunning = saved }()

	// Exports that compute their values: only a compile reads them.
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.wasm"), filepath.Join(dir, "out.wasm")
	if err := os.WriteFile(in, computed(t, "3"), 0o644); err != nil {
		t.Fatal(err)
	}
	annotate := func(args ...string) (*metadata.Metadata, []byte, string) {
		t.Helper()
		code, stdoutText, errText := runCLI(t, append([]string{"annotate"}, args...)...)
		if code != 0 {
			t.Fatalf("annotate %v: exit %d\n%s%s", args, code, stdoutText, errText)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		md, err := metadata.Read(b)
		if err != nil || md == nil {
			t.Fatalf("metadata.Read = %v, %v", md, err)
		}
		return md, b, errText
	}

	md, first, errText := annotate(in, "--name", "p", "--version", "1.0.0", "-o", out)
	if compiles != 1 || md.ABIVersion != 1 || strings.Join(md.Capabilities, ",") != "log,http" {
		t.Fatalf("first annotate: %d compiles, metadata %+v", compiles, md)
	}
	if !strings.Contains(errText, "compiling "+in+" to read its ABI version and capabilities") || !strings.Contains(errText, "'s exports in ") {
		t.Errorf("first annotate's stderr does not say it compiles and how long it took:\n%s", errText)
	}

	md, second, errText := annotate(out, "--version", "1.1.0", "-o", out)
	if compiles != 1 {
		t.Fatalf("re-annotating only the version compiled the module (%d compiles)", compiles)
	}
	if md.Version != "1.1.0" || md.Name != "p" || md.ABIVersion != 1 || strings.Join(md.Capabilities, ",") != "log,http" {
		t.Fatalf("re-annotated metadata %+v", md)
	}
	if strings.Contains(errText, "compiling") || !strings.Contains(errText, "keeping the ABI version 1 and capabilities log, http") {
		t.Errorf("re-annotate's stderr:\n%s", errText)
	}
	// Byte-identical apart from the metadata section: the first output
	// with its section replaced by the second's metadata is the second.
	if want, err := metadata.Write(first, md); err != nil || !bytes.Equal(second, want) {
		t.Fatalf("re-annotating changed more than the metadata section (%v)", err)
	}

	if md, _, errText = annotate(out, "--version", "1.2.0", "-reread", "-o", out); compiles != 2 || md.ABIVersion != 1 || !strings.Contains(errText, "compiling") {
		t.Fatalf("-reread: %d compiles, metadata %+v, stderr:\n%s", compiles, md, errText)
	}
	// Both given: nothing to read.
	if _, _, errText = annotate(in, "--name", "p", "--abi-version", "1", "--capabilities", "log", "-o", out); compiles != 2 || errText != "" {
		t.Fatalf("--abi-version and --capabilities given: %d compiles, stderr:\n%s", compiles, errText)
	}

	// Constant export bodies are read without compiling.
	minimal := filepath.Join(testguest.Root(), "runtime", "testdata", "abi", "minimal.wasm")
	if md, _, errText = annotate(minimal, "--name", "m", "-o", out); compiles != 2 || md.ABIVersion != 1 || len(md.Capabilities) != 0 || errText != "" {
		t.Fatalf("constant-bodied module: %d compiles, metadata %+v, stderr:\n%s", compiles, md, errText)
	}
}
