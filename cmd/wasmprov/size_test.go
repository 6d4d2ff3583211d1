package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
)

// TestLiteBuild: -tags nokube (make cli-lite) leaves out the controller
// command and kube.go's clients, which make the full binary half again as
// large as the distribution tools need (the measurements are in
// docs/DISTRIBUTION.md, "Binary size"). The packages are looked for in both
// builds, so that the test fails both when a file brings them back into
// the lite build and when the full build stops having them (then the test
// no longer measures anything). Unless -short, the lite binary is built
// and run: it compiles, has no controller command, and refuses the
// Kubernetes flags saying why.
func TestLiteBuild(t *testing.T) {
	heavy := []string{
		"k8s.io/client-go/kubernetes/fake", // --secret-file: a fake client of every API group, ~23 MB
		"k8s.io/client-go/tools/clientcmd", // --kubeconfig, the controller
	}
	full, lite := goListDeps(t), goListDeps(t, "-tags", "nokube")
	for _, p := range heavy {
		if !full[p] {
			t.Errorf("the full build no longer depends on %s: update the test and docs/DISTRIBUTION.md's numbers", p)
		}
		if lite[p] {
			t.Errorf("the -tags nokube build depends on %s", p)
		}
	}
	if testing.Short() {
		return
	}
	bin := filepath.Join(t.TempDir(), "wasmprov-lite")
	if b, err := exec.Command("go", "build", "-tags", "nokube", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags nokube: %v\n%s", err, b)
	}
	if b, err := exec.Command(bin, "controller").CombinedOutput(); err == nil || !strings.Contains(string(b), `unknown command "controller"`) {
		t.Errorf("wasmprov-lite controller: %v\n%s", err, b)
	}
	b, err := exec.Command(bin, "help").CombinedOutput()
	if err != nil || !strings.Contains(string(b), "inspect") || !strings.Contains(string(b), "push") {
		t.Errorf("wasmprov-lite help lacks the distribution commands: %v\n%s", err, b)
	}
	minimal := filepath.Join(testguest.Root(), "runtime", "testdata", "abi", "minimal.wasm")
	machine := filepath.Join(testguest.Root(), "examples", "fake", "machine.yaml")
	if b, err := exec.Command(bin, "call", minimal, "Get", "-f", machine, "-cache", "", "--kubeconfig", "/nonexistent").CombinedOutput(); err == nil || !strings.Contains(string(b), "-tags nokube") {
		t.Errorf("wasmprov-lite call --kubeconfig: %v\n%s", err, b)
	}
}

// goListDeps returns the packages this command's build depends on.
func goListDeps(t *testing.T, flags ...string) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", append(append([]string{"list", "-deps"}, flags...), ".")...).Output()
	if err != nil {
		t.Fatalf("go list -deps %v: %v", flags, err)
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		deps[p] = true
	}
	return deps
}
