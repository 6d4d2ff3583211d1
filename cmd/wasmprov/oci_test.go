package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
	"github.com/wasmprov/wasmprov/runtime/metadata"
)

// TestOCICommands: annotate, push, digest, pull by tag and by digest, and
// the air gap (save, then load into another store and pull with the
// registry gone), against a real registry with TLS and basic auth.
func TestOCICommands(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{User: "bob", Password: "pw", TLS: true})
	dir := t.TempDir()
	annotated := filepath.Join(dir, "fake.wasm")
	if _, err := run(t, "annotate", testguest.Build(t, "examples/fake"), "--name", "fake", "--version", "0.1.0", "--abi-version", "1", "--capabilities", "log", "-o", annotated); err != nil {
		t.Fatal(err)
	}
	wasm, _ := os.ReadFile(annotated)
	common := []string{"--docker-config", testregistry.DockerConfig(t, reg.Host, "bob", "pw"), "--ca-file", reg.CAFile, "--store", filepath.Join(dir, "store")}
	ref := reg.Host + "/providers/fake:0.1.0"

	out, err := run(t, append([]string{"push", annotated, ref}, common...)...)
	if err != nil {
		t.Fatal(err)
	}
	pinned := strings.TrimSpace(out)
	if !strings.HasPrefix(pinned, reg.Host+"/providers/fake@sha256:") {
		t.Fatalf("push printed %q", out)
	}
	out, err = run(t, append([]string{"digest", ref}, common...)...)
	if err != nil || strings.TrimSpace(out) != pinned[strings.Index(pinned, "@")+1:] {
		t.Fatalf("digest printed %q, %v; push printed %s", out, err, pinned)
	}
	pulled := filepath.Join(dir, "pulled.wasm")
	if out, err = run(t, append([]string{"pull", ref, "-o", pulled}, common...)...); err != nil || strings.TrimSpace(out) != pinned {
		t.Fatalf("pull printed %q, %v", out, err)
	}
	if b, _ := os.ReadFile(pulled); !bytes.Equal(b, wasm) {
		t.Fatal("pulled module differs from the pushed one")
	}
	bundle := filepath.Join(dir, "bundle.tar")
	if _, err := run(t, append([]string{"save", ref, "-o", bundle}, common...)...); err != nil {
		t.Fatal(err)
	}
	reg.Server.Close()

	// The other side of the gap: another store, no registry.
	offline := []string{"--store", filepath.Join(dir, "offline")}
	out, err = run(t, append([]string{"load", bundle}, offline...)...)
	if err != nil || strings.TrimSpace(out) != pinned {
		t.Fatalf("load printed %q, %v; want %s", out, err, pinned)
	}
	again := filepath.Join(dir, "again.wasm")
	if _, err := run(t, append([]string{"pull", pinned, "-o", again}, offline...)...); err != nil {
		t.Fatalf("offline pull by digest: %v", err)
	}
	if b, _ := os.ReadFile(again); !bytes.Equal(b, wasm) {
		t.Fatal("offline module differs")
	}
	// By tag, offline, there is nothing to ask: an error naming the ref.
	if _, err := run(t, append([]string{"pull", ref, "-o", again}, offline...)...); err == nil || !strings.Contains(err.Error(), ref) {
		t.Fatalf("offline pull by tag: %v", err)
	}
	if _, err := run(t, "pull", "--plain-http", "registry.example.com/p/x:1", "-o", again, "--store", ""); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("plain HTTP to a remote registry: %v", err)
	}
}

// TestOutputToStdout: -o - writes the module (pull) or the bundle (save)
// to stdout, nothing else, the references going to stderr; no file named
// "-" appears; the bundle from stdout loads.
func TestOutputToStdout(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	dir := t.TempDir()
	t.Chdir(dir)
	common := []string{"--plain-http", "--store", filepath.Join(dir, "store")}
	fake := testguest.Build(t, "examples/fake")
	wasm, _ := os.ReadFile(fake)
	ref := reg.Host + "/providers/fake:1"
	code, out, errOut := runCLI(t, append([]string{"push", fake, ref}, common...)...)
	if code != 0 {
		t.Fatal(errOut)
	}
	pinned := strings.TrimSpace(out)

	code, out, errOut = runCLI(t, append([]string{"pull", ref, "-o", "-"}, common...)...)
	if code != 0 || out != string(wasm) || errOut != pinned+"\n" {
		t.Fatalf("pull -o -: exit %d, %d bytes on stdout (want the %d of the module), stderr %q", code, len(out), len(wasm), errOut)
	}
	code, out, errOut = runCLI(t, append([]string{"save", ref, "-o", "-"}, common...)...)
	if code != 0 || !strings.Contains(errOut, pinned) || strings.Contains(out, pinned+"\n") {
		t.Fatalf("save -o -: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Fatal(`-o - wrote a file named "-"`)
	}
	bundle := filepath.Join(dir, "bundle.tar")
	os.WriteFile(bundle, []byte(out), 0o644)
	if code, out, errOut := runCLI(t, "load", bundle, "--store", filepath.Join(dir, "offline")); code != 0 || strings.TrimSpace(out) != pinned {
		t.Fatalf("load of the bundle save wrote to stdout: exit %d, %q\n%s", code, out, errOut)
	}
	// annotate: the module on stdout, its summary on stderr. Both flags
	// given: nothing to compile.
	code, out, errOut = runCLI(t, "annotate", fake, "--name", "fake", "--version", "9.9.9", "--abi-version", "1", "--capabilities", "", "-o", "-")
	if code != 0 || !strings.Contains(errOut, "fake 9.9.9") {
		t.Fatalf("annotate -o -: exit %d, %d bytes on stdout, stderr %q", code, len(out), errOut)
	}
	if md, err := metadata.Read([]byte(out)); err != nil || md == nil || md.Version != "9.9.9" {
		t.Fatalf("annotate -o -: stdout is not the annotated module: %+v, %v", md, err)
	}
	code, out, errOut = runCLI(t, "gen", "machine-controller-adapter", "--provider", "acme-wasm", "--module", "/srv/acme.wasm", "-o", "-")
	if code != 0 || !strings.Contains(out, "package acmewasm\n") {
		t.Fatalf("gen -o -: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Fatal(`-o - wrote a file named "-"`)
	}
}

// TestReferenceNeedsTagOrDigest: a reference with neither a tag nor a
// digest is refused before any request by every command taking one,
// saying what to add; a registry port is not taken for a tag.
func TestReferenceNeedsTagOrDigest(t *testing.T) {
	bare := "127.0.0.1:5000/providers/fake"
	key := filepath.Join(t.TempDir(), "k")
	os.WriteFile(key, []byte("x"), 0o600)
	for _, args := range [][]string{
		{"pull", bare, "-o", "x.wasm"}, {"digest", bare}, {"save", bare, "-o", "b.tar"}, {"push", key, bare},
		{"verify", bare, "--key", key}, {"discover", bare}, {"tag", bare, "stable"}, {"tag", bare + ":1", "127.0.0.1:5000/providers/fake"},
	} {
		code, _, errOut := runCLI(t, append(args, "--plain-http", "--store", "")...)
		if code == 0 || !strings.Contains(errOut, "names no version: add :TAG or @sha256:DIGEST") {
			t.Errorf("%s: exit %d\n%s", strings.Join(args, " "), code, errOut)
		}
	}
	for _, ref := range []string{bare + ":1", bare + "@sha256:" + strings.Repeat("a", 64), "localhost/fake:1"} {
		if err := needTagOrDigest(ref); err != nil {
			t.Errorf("%s refused: %v", ref, err)
		}
	}
}

// TestHelpShowsReadFlags: a command's help lists the OCI flags it reads
// and none it does not; one it does not read is still accepted (scripts
// pass one set to every command) and changes nothing.
func TestHelpShowsReadFlags(t *testing.T) {
	registryFlags := []string{"-docker-config", "-ca-file", "-plain-http", "-allow-redirect-host", "-timeout"}
	storeFlags := []string{"-store ", "-store-max-bytes"}
	for _, tc := range []struct {
		cmd           []string
		shown, hidden []string
	}{
		{[]string{"digest"}, registryFlags, append([]string{"-max-module-bytes"}, storeFlags...)},
		{[]string{"tag"}, registryFlags, append([]string{"-max-module-bytes"}, storeFlags...)},
		{[]string{"discover"}, append([]string{"-no-referrers-api"}, registryFlags...), append([]string{"-max-module-bytes"}, storeFlags...)},
		{[]string{"load"}, append([]string{"-max-module-bytes"}, storeFlags...), registryFlags},
		{[]string{"verify"}, append([]string{"-store ", "-key", "-policy"}, registryFlags...), []string{"-max-module-bytes", "-store-max-bytes"}},
		{[]string{"pull"}, append(append([]string{"-max-module-bytes", "-o FILE"}, storeFlags...), registryFlags...), nil},
		{[]string{"store", "ls"}, []string{"-store ", "-q"}, append([]string{"-max-module-bytes", "-store-max-bytes"}, registryFlags...)},
		{[]string{"login"}, append([]string{"-u ", "-password-stdin"}, registryFlags...), append([]string{"-max-module-bytes"}, storeFlags...)},
	} {
		code, out, _ := runCLI(t, append(tc.cmd, "--help")...)
		if code != 0 {
			t.Errorf("%s --help: exit %d", tc.cmd, code)
		}
		for _, f := range tc.shown {
			if !strings.Contains(out, "  "+f) {
				t.Errorf("%s --help lacks %s:\n%s", tc.cmd, f, out)
			}
		}
		for _, f := range tc.hidden {
			if strings.Contains(out, "  "+f) {
				t.Errorf("%s --help shows %s, which it does not read:\n%s", tc.cmd, f, out)
			}
		}
	}
	// load with a registry flag it does not read: accepted, and ignored
	// (a --ca-file that does not exist would fail if it were read).
	reg := testregistry.Start(t, testregistry.Options{})
	dir := t.TempDir()
	common := []string{"--plain-http", "--store", filepath.Join(dir, "store")}
	ref := reg.Host + "/providers/fake:1"
	if code, _, errOut := runCLI(t, append([]string{"push", testguest.Build(t, "examples/fake"), ref}, common...)...); code != 0 {
		t.Fatal(errOut)
	}
	bundle := filepath.Join(dir, "b.tar")
	if code, _, errOut := runCLI(t, append([]string{"save", ref, "-o", bundle}, common...)...); code != 0 {
		t.Fatal(errOut)
	}
	if code, _, errOut := runCLI(t, "load", bundle, "--store", filepath.Join(dir, "other"), "--ca-file", filepath.Join(dir, "nosuch.pem")); code != 0 {
		t.Errorf("load with an unread --ca-file: %s", errOut)
	}
	if code, out, errOut := runCLI(t, "digest", ref, "--plain-http", "--store", filepath.Join(dir, "unread")); code != 0 || !strings.HasPrefix(out, "sha256:") {
		t.Errorf("digest with an unread --store: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "unread")); err == nil {
		t.Error("digest created the store it does not read")
	}
}
