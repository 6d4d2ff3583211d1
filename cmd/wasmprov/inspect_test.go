package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime/metadata"
)

// A constant body is read statically and labelled so; what the metadata
// declares is shown as a declaration when the code's value is unknown,
// never as the value.
func TestInspectSources(t *testing.T) {
	minimal := filepath.Join(testguest.Root(), "runtime", "testdata", "abi", "minimal.wasm")
	out, err := run(t, "inspect", "-cache", "", minimal)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"abi version:   1 (host implements 1) [from wasmprov_abi_version's constant body]",
		"[from wasmprov_capabilities's constant body]"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect of a constant-bodied module lacks %q:\n%s", want, out)
		}
	}

	fake, err := os.ReadFile(testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	annotated, err := metadata.Write(fake, &metadata.Metadata{Name: "fake", ABIVersion: 1, Capabilities: []string{"log", "http"}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fake.wasm")
	if err := os.WriteFile(path, annotated, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "inspect", "-cache", "", path)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"abi version:   unknown without running the module (-run calls wasmprov_abi_version); the metadata declares 1 (not read from the code)",
		"capabilities:  unknown without running the module (-run calls wasmprov_capabilities); the metadata declares log, http (not read from the code)"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect of an annotated Go guest lacks %q:\n%s", want, out)
		}
	}
}

// The cache is keyed by the module's bytes, not its file: a module written
// over one that ran does not get its values; a damaged entry is ignored.
func TestInspectCacheFollowsBytes(t *testing.T) {
	cache, path := t.TempDir(), filepath.Join(t.TempDir(), "p.wasm")
	write := func(caps string) {
		t.Helper()
		if err := os.WriteFile(path, computed(t, caps), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("3") // log, http
	if out, err := run(t, "inspect", path, "-run", "-cache", cache); err != nil || !strings.Contains(out, "[from a call of wasmprov_capabilities]") {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err := run(t, "inspect", "-cache", cache, path)
	if err != nil || !strings.Contains(out, "capabilities:  log, http [from the cache") || !strings.Contains(out, "abi version:   1 (host implements 1) [from the cache") {
		t.Fatalf("static inspect after -run: %v\n%s", err, out)
	}
	write("1") // another module, same file
	out, err = run(t, "inspect", "-cache", cache, path)
	if err != nil || !strings.Contains(out, "capabilities:  unknown without running the module") || strings.Contains(out, "[from the cache") {
		t.Fatalf("another module at the same path: %v\n%s", err, out)
	}
	entries, _ := filepath.Glob(filepath.Join(cache, "*", "*.json"))
	if len(entries) == 0 {
		t.Fatal("no cache entries written")
	}
	for _, e := range entries {
		if err := os.WriteFile(e, []byte("{damaged"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("3")
	out, err = run(t, "inspect", "-cache", cache, path)
	if err != nil || !strings.Contains(out, "capabilities:  unknown without running the module") {
		t.Fatalf("a damaged entry: %v\n%s", err, out)
	}
}

// computed is the minimal ABI fixture with scalar exports that compute
// their values (capabilities caps), so that only a call tells them.
func computed(t *testing.T, caps string) []byte {
	t.Helper()
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Fatalf("wat2wasm (wabt) is needed to assemble the test modules: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(testguest.Root(), "runtime", "testdata", "abi", "minimal.wat"))
	if err != nil {
		t.Fatal(err)
	}
	wat := strings.Replace(string(src), "(result i32) (i32.const 1))", "(result i32) (i32.add (i32.const 0) (i32.const 1)))", 1)
	wat = strings.Replace(wat, "(result i64) (i64.const 0))", "(result i64) (i64.add (i64.const 0) (i64.const "+caps+")))", 1)
	if wat == string(src) {
		t.Fatal("minimal.wat changed: the scalar exports were not found")
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "m.wat"), filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(in, []byte(wat), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(tool, in, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
