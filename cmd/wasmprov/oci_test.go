package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
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
