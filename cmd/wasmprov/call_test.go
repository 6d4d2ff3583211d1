package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
)

// call -v and -log-level show the provider's (and the host's) log records
// at the level asked on stderr; the result alone stays on stdout.
func TestCallLogLevel(t *testing.T) {
	fake := testguest.Build(t, "examples/fake")
	machine := filepath.Join(testguest.Root(), "examples", "fake", "machine.yaml")
	cache := testguest.CompilationCacheDir(t)
	const guestDebug = "succeeding validation as requested" // the fake's Validate logs it at debug
	const hostInfo = "provider loaded"
	for _, tc := range []struct {
		flags           []string
		debug, hostInfo bool
	}{
		{nil, false, false}, // warnings and up by default
		{[]string{"-log-level", "info"}, false, true},
		{[]string{"-log-level", "debug"}, true, true},
		{[]string{"-v"}, true, true},
		{[]string{"-log-level", "error"}, false, false},
	} {
		args := append([]string{"call", fake, "Validate", "-f", machine, "-cache", cache}, tc.flags...)
		code, out, errOut := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", tc.flags, code, errOut)
		}
		if out != "valid: true\n" {
			t.Errorf("%v: stdout is %q, want the result alone", tc.flags, out)
		}
		if got := strings.Contains(errOut, guestDebug); got != tc.debug {
			t.Errorf("%v: the guest's debug record on stderr: %v, want %v:\n%s", tc.flags, got, tc.debug, errOut)
		}
		if got := strings.Contains(errOut, hostInfo); got != tc.hostInfo {
			t.Errorf("%v: the host's info record on stderr: %v, want %v:\n%s", tc.flags, got, tc.hostInfo, errOut)
		}
	}
	if code, _, errOut := runCLI(t, "call", fake, "Validate", "-f", machine, "-log-level", "chatty"); code == 0 || !strings.Contains(errOut, "--log-level") {
		t.Errorf("an unknown level: exit %d, stderr %q", code, errOut)
	}
}

// The acceptance of issue 14: `wasmprov call hetzner.wasm Validate -f
// m.yaml --secret-file token-secret.yaml` works for a Machine whose token is
// a secretKeyRef, with the token from the file reaching the cloud.
func TestCallSecretFile(t *testing.T) {
	hetzner, cache, sim := hetznerCallSetup(t)
	dir := t.TempDir()
	testdata := filepath.Join("testdata", "hetzner")
	machine := hetznerMachine(t, "ENDPOINT", sim.URL)
	secret, policy := filepath.Join(testdata, "token-secret.yaml"), filepath.Join(testdata, "policy.yaml")
	call := func(extra ...string) (int, string, string) {
		return runCLI(t, append([]string{"call", hetzner, "Validate", "-f", machine, "-policy", policy, "-cache", cache}, extra...)...)
	}

	sim.ResetRequests()
	code, out, errOut := call("--secret-file", secret)
	if code != 0 || out != "valid: true\n" {
		t.Fatalf("Validate with --secret-file: exit %d, stdout %q\n%s", code, out, errOut)
	}
	if len(sim.Requests()) == 0 {
		t.Error("Validate reached no simulator: the lookups it makes with the token did not run")
	}
	for _, r := range sim.Requests() {
		if r.Status == 401 {
			t.Errorf("the simulator refused the token: %+v", r)
		}
	}

	// Without a source the reference cannot be resolved, as before.
	if code, _, errOut := call(); code == 0 || !strings.Contains(errOut, "no Kubernetes client") {
		t.Errorf("without --secret-file: exit %d, stderr %q", code, errOut)
	}
	// The token in the file is what the cloud sees: a wrong one is refused.
	wrong := filepath.Join(dir, "wrong.yaml")
	os.WriteFile(wrong, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: hetzner-token, namespace: kube-system}\nstringData: {token: wrong}\n"), 0o644)
	if code, _, errOut := call("--secret-file", wrong); code == 0 || !strings.Contains(strings.ToLower(errOut), "unauthorized") {
		t.Errorf("with a wrong token: exit %d, stderr %q", code, errOut)
	}
	// A file without the Secret the Machine references does not resolve it.
	other := filepath.Join(dir, "other.yaml")
	os.WriteFile(other, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: other, namespace: kube-system}\nstringData: {token: sim-token}\n"), 0o644)
	if code, _, errOut := call("--secret-file", other); code == 0 || !strings.Contains(errOut, "hetzner-token") {
		t.Errorf("without the referenced Secret: exit %d, stderr %q", code, errOut)
	}
}

// Cleanup and SetMetricsForMachines, the methods of machine-controller's
// current contract, from the command line.
func TestCallCurrentContractMethods(t *testing.T) {
	fake := testguest.Build(t, "examples/fake")
	machine := filepath.Join(testguest.Root(), "examples", "fake", "machine.yaml")
	cache := testguest.CompilationCacheDir(t)
	code, out, errOut := runCLI(t, "call", fake, "Cleanup", "-f", machine, "-cache", cache)
	if code != 0 || out != "done: true\n" {
		t.Errorf("Cleanup: exit %d, stdout %q\n%s", code, out, errOut)
	}
	// The fake reports no metrics of its own: an empty list, not an error.
	code, out, errOut = runCLI(t, "call", fake, "SetMetricsForMachines", "-f", machine, "-cache", cache)
	if code != 0 || out != "metrics: []\n" {
		t.Errorf("SetMetricsForMachines: exit %d, stdout %q\n%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "call", fake, "Cleanup2", "-f", machine); code == 0 || !strings.Contains(errOut, "SetMetricsForMachines") {
		t.Errorf("unknown method: exit %d, stderr %q", code, errOut)
	}
}

// --alias sends an unmodified provider's requests for its real API host to
// a simulator: the Machine is the one a user writes (no endpoint), and
// without the alias the same call reaches nothing.
func TestCallAlias(t *testing.T) {
	hetzner, cache, sim := hetznerCallSetup(t)
	machine := hetznerMachine(t, "        endpoint: ENDPOINT\n", "")
	call := func(extra ...string) (int, string, string) {
		return runCLI(t, append([]string{"call", hetzner, "Validate", "-f", machine, "-cache", cache,
			"--secret-file", filepath.Join("testdata", "hetzner", "token-secret.yaml")}, extra...)...)
	}
	code, out, errOut := call("--alias", "api.hetzner.cloud="+strings.TrimSuffix(sim.URL, "/v1"))
	if code != 0 || out != "valid: true\n" {
		t.Fatalf("Validate through --alias: exit %d, stdout %q\n%s", code, out, errOut)
	}
	if len(sim.Requests()) == 0 {
		t.Fatal("Validate reached no simulator through the alias")
	}
	sim.ResetRequests()
	if code, _, errOut := call(); code == 0 || len(sim.Requests()) != 0 {
		t.Fatalf("without --alias: exit %d, %d requests reached the simulator\n%s", code, len(sim.Requests()), errOut)
	}
	for _, bad := range []string{"api.hetzner.cloud", "api.hetzner.cloud=http://10.0.0.5:80"} {
		if code, _, errOut := call("--alias", bad); code == 0 || !strings.Contains(strings.ToLower(errOut), "alias") {
			t.Errorf("--alias %s: exit %d, stderr %q; want a refusal naming the alias", bad, code, errOut)
		}
	}
}

// hetznerCallSetup builds the Hetzner guest and starts a simulator for a
// test of call.
func hetznerCallSetup(t *testing.T) (wasm, cache string, sim *hcloudsim.Running) {
	sim, err := hcloudsim.Start(hcloudsim.Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	return testguest.Build(t, "examples/hetzner"), testguest.CompilationCacheDir(t), sim
}

// hetznerMachine writes testdata/hetzner/machine.yaml with old replaced by
// new and returns its path.
func hetznerMachine(t *testing.T, old, new string) string {
	b, err := os.ReadFile(filepath.Join("testdata", "hetzner", "machine.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	machine := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(machine, []byte(strings.ReplaceAll(string(b), old, new)), 0o644); err != nil {
		t.Fatal(err)
	}
	return machine
}
