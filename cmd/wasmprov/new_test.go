package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/conformance"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
)

// TestAuthoringQuickstart runs the quick start of docs/AUTHORING.md, as
// written there: build the CLI, scaffold a provider with `wasmprov new`,
// build it, run `wasmprov conformance` and the project's own tests.
func TestAuthoringQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and a provider project")
	}
	root := testguest.Root()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "AUTHORING.md"))
	if err != nil {
		t.Fatal(err)
	}
	script := quickstart(t, string(doc))
	dir := t.TempDir()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	// The quick start builds the CLI as a reader would, without build tags:
	// drop an engine choice made for the test run (make test-wasmtime).
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "WASMPROV_ENGINE=") })
	// conformance caches compiled modules in the user's cache directory
	// by default: the test's own, not the developer's. Go's build cache
	// would follow XDG_CACHE_HOME too: it stays where it is.
	cmd.Env = append(env, "WASMPROV_ROOT="+root, "XDG_CACHE_HOME="+t.TempDir(), "GOCACHE="+goCache(t))
	out, err := cmd.CombinedOutput()
	t.Logf("quick start output:\n%s", out)
	if err != nil {
		t.Fatalf("the AUTHORING.md quick start failed: %v", err)
	}
	// The scaffold passes the stateless profile: every check but those
	// that need state.
	stateful := 0
	for _, c := range conformance.Checks {
		if c.Stateful {
			stateful++
		}
	}
	want := fmt.Sprintf("PASS: %d passed, 0 warnings, 0 failed, %d skipped", len(conformance.Checks)-stateful, stateful)
	if !strings.Contains(string(out), want) {
		t.Fatalf("wasmprov conformance did not report %q", want)
	}
	if _, err := os.Stat(filepath.Join(dir, "myprov", "myprov.wasm")); err != nil {
		t.Fatal(err)
	}
}

// quickstart extracts the fenced block that follows the
// "<!-- quickstart -->" marker.
func quickstart(t *testing.T, doc string) string {
	_, after, ok := strings.Cut(doc, "<!-- quickstart -->")
	if !ok {
		t.Fatal("docs/AUTHORING.md has no <!-- quickstart --> block")
	}
	_, after, ok = strings.Cut(after, "```sh\n")
	block, _, ok2 := strings.Cut(after, "```")
	if !ok || !ok2 {
		t.Fatal("the quickstart marker is not followed by a ```sh block")
	}
	return block
}

// A project `wasmprov new` writes keeps working after `go mod tidy`: its
// Makefile runs the CLI as `go tool wasmprov`, and the tool directive keeps
// the CLI's requirements, which tidy used to drop (nothing imports the
// command), breaking `make conformance`.
func TestNewProjectSurvivesTidy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and a provider project")
	}
	root, err := filepath.Abs(testguest.Root())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "tidyprov")
	if code, _, errOut := runCLI(t, "new", "--wasmprov", root, dir); code != 0 {
		t.Fatalf("wasmprov new: exit %d: %s", code, errOut)
	}
	// Offline, as the drop-in test: make modules downloaded what builds;
	// -e because tidy also looks up what only the tests of dependencies
	// import, which changes go.sum only. The compiled-module cache is the
	// test's own, the build cache the run's.
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "WASMPROV_ENGINE=") }),
		"GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off", "GOWORK=off",
		"XDG_CACHE_HOME="+t.TempDir(), "GOCACHE="+goCache(t))
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("go", "mod", "tidy", "-e")
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "\ntool github.com/wasmprov/wasmprov/cmd/wasmprov\n") {
		t.Fatalf("go.mod lost its tool directive:\n%s", mod)
	}
	if out := run("make", "conformance"); !strings.Contains(out, "PASS: ") || !strings.Contains(out, " 0 failed") {
		t.Fatalf("make conformance after go mod tidy:\n%s", out)
	}
}

// goCache is the build cache the test runs with, to keep for the go
// commands it starts with XDG_CACHE_HOME elsewhere (which Go's build cache
// would follow too).
func goCache(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
