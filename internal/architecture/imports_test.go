package architecture_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
)

const mod = "github.com/wasmprov/wasmprov/"

// deps lists the transitive imports of pkg (a path under the module).
func deps(t *testing.T, pkg string, tags ...string) []string {
	t.Helper()
	args := []string{"list", "-deps"}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	// pkg may be in a module beside the main one (cmd/wasmprov,
	// controller): go list runs in the module that holds it.
	dir, rel := moduleOf(t, pkg)
	cmd := exec.Command("go", append(args, "./"+rel)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./%s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// moduleOf returns the directory of the module that holds pkg (a path
// under the repository) and pkg's path relative to it.
func moduleOf(t *testing.T, pkg string) (dir, rel string) {
	t.Helper()
	root := testguest.Root()
	for d := pkg; d != "."; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(root, d, "go.mod")); err == nil {
			r, err := filepath.Rel(d, pkg)
			if err != nil {
				t.Fatal(err)
			}
			return filepath.Join(root, d), r
		}
	}
	return root, pkg
}

// TestImportInvariants: the rules of docs/ARCHITECTURE.md, "Who imports
// whom". A rule broken here is a design change: change the document with
// the code, or the code back.
func TestImportInvariants(t *testing.T) {
	for _, rule := range []struct {
		pkg, why string
		tags     []string
		banned   []string
	}{
		{pkg: "runtime", why: "the host never links the guest SDK, nor the current contract's zap and controller-runtime",
			banned: []string{mod + "guests/", "go.uber.org/zap", "sigs.k8s.io/controller-runtime", mod + "runtime/registry", mod + "cloudprovider",
				"oras.land/", mod + "runtime/oci", "github.com/sigstore/"}},
		{pkg: "cmd/wasmprov", why: "the registry server used by tests never ships in the CLI",
			banned: []string{"github.com/distribution/distribution", mod + "internal/testing/testregistry"}},
		{pkg: "runtime", tags: []string{"wasmtime"}, why: "the same with the wasmtime engine", banned: []string{mod + "guests/", "go.uber.org/zap"}},
		{pkg: "runtime/internal/engine/wazeroengine", why: "an engine never imports the runtime (a cycle)", banned: []string{mod + "runtime\n"}},
		{pkg: "internal/hostmodule", why: "host functions are engine-free",
			banned: []string{"github.com/tetratelabs/wazero", "github.com/bytecodealliance/wasmtime-go", mod + "runtime/internal/engine"}},
		{pkg: "controller", why: "the controller drives any implementation, not the runtime", banned: []string{mod + "runtime\n", mod + "runtime/"}},
		{pkg: "cloudprovider/types", why: "the contract mirrors upstream's types only", banned: []string{mod + "runtime"}},
		{pkg: "apis/wasmprov/v1alpha1", why: "an API's types import no part of the host", banned: []string{mod + "runtime", mod + "controller", mod + "internal/"}},
		{pkg: "controller", why: "the Machine controller sees only a ProviderSource; the CLI wires the WasmProvider reconciler", banned: []string{mod + "controller/wasmprovider"}},
		{pkg: "provider", why: "the provider interface is a leaf: API types and the instance contract only",
			banned: []string{mod + "runtime", mod + "internal/", mod + "cloud\n", mod + "controller", mod + "cloudprovider", "go.uber.org/zap", "sigs.k8s.io/controller-runtime"}},
		{pkg: "controller", why: "the controller calls providers through provider.Interface, not a contract's adapter", banned: []string{mod + "cloud\n", mod + "cloudprovider"}},
		{pkg: "controller/infrastructure", why: "the Cluster API provider reads Cluster API's objects unstructured, calls providers through provider.Interface and does not climb back to the Machine controller",
			banned: []string{"sigs.k8s.io/cluster-api", mod + "runtime", mod + "controller\n", mod + "cloud\n", mod + "cloudprovider"}},
	} {
		list := strings.Join(deps(t, rule.pkg, rule.tags...), "\n") + "\n"
		for _, b := range rule.banned {
			if strings.Contains(list, b) {
				t.Errorf("%s (tags %v) imports %s: %s", rule.pkg, rule.tags, strings.TrimSpace(b), rule.why)
			}
		}
	}
	// The public host-function package is what an embedder's own host
	// functions import: the ABI and the standard library only.
	for _, d := range deps(t, "hostfuncs") {
		if first, _, _ := strings.Cut(d, "/"); strings.Contains(first, ".") && d != mod+"hostfuncs" && d != mod+"abi" {
			t.Errorf("hostfuncs imports %s: it must import only abi and the standard library", d)
		}
	}
	// The ABI package compiles for host and guest: the standard library
	// only (a path without a dot in its first element), besides itself.
	for _, d := range deps(t, "abi") {
		if first, _, _ := strings.Cut(d, "/"); strings.Contains(first, ".") && d != mod+"abi" {
			t.Errorf("abi imports %s: it must stay standard-library only", d)
		}
	}
}
