package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var buf bytes.Buffer
	stdout = &buf
	defer func() { stdout = os.Stdout }()
	err := commands[args[0]].run(context.Background(), args[1:])
	return buf.String(), err
}

func TestCallFake(t *testing.T) {
	fake := testguest.Build(t, "examples/fake")
	machine := filepath.Join(testguest.Root(), "examples", "fake", "machine.yaml")
	cache := testguest.CompilationCacheDir(t)

	out, err := run(t, "call", fake, "Get", "-f", machine, "-cache", cache)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"instance:", "providerID: fake://6c1f7b8e-0f1e-4a43-9d0f-2f4b8f1e6a10", "status: running"} {
		if !strings.Contains(out, want) {
			t.Errorf("Get output lacks %q:\n%s", want, out)
		}
	}

	failing := filepath.Join(t.TempDir(), "m.yaml")
	b, _ := os.ReadFile(machine)
	os.WriteFile(failing, bytes.Replace(b, []byte("passValidation: true"), []byte("passValidation: false"), 1), 0o644)
	_, err = run(t, "call", fake, "Validate", "-f", failing, "-cache", cache)
	if err == nil || !strings.Contains(err.Error(), "failing validation as requested") {
		t.Fatalf("Validate of a failing spec: %v", err)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("apiVersion: cluster.k8s.io/v1alpha1\nkind: Machine\nspec:\n  providerSpecc: {}\n"), 0o644)
	if _, err := run(t, "call", fake, "Validate", "-f", bad, "-cache", cache); err == nil || !strings.Contains(err.Error(), "not a valid Machine manifest") {
		t.Fatalf("a manifest with an unknown field: %v", err)
	}
	if _, err := run(t, "call", fake, "Reboot", "-f", machine, "-cache", cache); err == nil || !strings.Contains(err.Error(), "unknown method") {
		t.Fatalf("an unknown method: %v", err)
	}
}

func TestInspect(t *testing.T) {
	hostcalls := testguest.Build(t, "examples/hostcalls")
	// Static, with no cache: a Go guest's exports are no constants, so
	// the values are unknown, and the output says how to read them.
	out, err := run(t, "inspect", "-cache", "", hostcalls)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"inspected:     statically: nothing compiled, no guest code run, function bodies not validated",
		"abi version:   unknown without running the module (-run calls wasmprov_abi_version)",
		"capabilities:  unknown without running the module (-run calls wasmprov_capabilities)",
		"wasmprov_validate (func (result i32))", "valid:         yes, as far as read without compiling (function bodies not validated"} {
		if !strings.Contains(out, want) {
			t.Errorf("static inspect output lacks %q:\n%s", want, out)
		}
	}
	// -run calls the exports, and leaves their values in the cache for a
	// static inspect, which says where it took them.
	cache := testguest.CompilationCacheDir(t)
	out, err = run(t, "inspect", "-run", "-cache", cache, hostcalls)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"inspected:     compiled and run (-run)",
		"abi version:   1 (host implements 1) [from a call of wasmprov_abi_version]",
		"capabilities:  log, http, machine_update, pv_list, config_var [from a call of wasmprov_capabilities]",
		"wasmprov_validate (func (result i32))", "valid:         yes\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect -run output lacks %q:\n%s", want, out)
		}
	}
	out, err = run(t, "inspect", "-cache", cache, hostcalls)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"inspected:     statically",
		"abi version:   1 (host implements 1) [from the cache: an earlier -run called wasmprov_abi_version on these bytes]",
		"capabilities:  log, http, machine_update, pv_list, config_var [from the cache: an earlier -run called wasmprov_capabilities on these bytes]"} {
		if !strings.Contains(out, want) {
			t.Errorf("static inspect after -run lacks %q:\n%s", want, out)
		}
	}

	bad := filepath.Join(testguest.Root(), "runtime", "testdata", "abi", "missing_export.wasm")
	for _, mode := range [][]string{nil, {"-run"}} {
		out, err = run(t, append(append([]string{"inspect"}, mode...), "-cache", cache, bad)...)
		if err == nil || !strings.Contains(out, `missing export "wasmprov_delete"`) {
			t.Fatalf("inspect %q of an invalid module: err=%v\n%s", mode, err, out)
		}
		// What the invalid module exports soundly is read all the same.
		for _, want := range []string{"abi version:   1 (host implements 1)", "capabilities:  (none)", "wasmprov_get (func (result i32))"} {
			if !strings.Contains(out, want) {
				t.Errorf("inspect %q of an invalid module lacks %q:\n%s", mode, want, out)
			}
		}
	}
}

func TestDemo(t *testing.T) {
	out, err := run(t, "demo", "-provider", testguest.Build(t, "examples/fake"), "-cache", testguest.CompilationCacheDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"AddDefaults", "Validate", "Create", "Get", "GetCloudConfig", "MachineMetricsLabels", "MigrateUID", "Delete"} {
		if !strings.Contains(out, "  "+step+" ") {
			t.Errorf("demo did not run %s:\n%s", step, out)
		}
	}
	if strings.Contains(out, "error:") {
		t.Errorf("demo reported an error:\n%s", out)
	}
}
