//go:build !wasip1

// Package cfake holds only the test of the C guest in examples/c-fake (a Go
// package cannot sit beside fake.c): built with build.sh, it passes the
// stateful conformance profile, every check (the stateless profile is the
// same checks minus two).
package cfake

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wasmprov/wasmprov/conformance"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/runtime"
)

const spec = `{"cloudProvider":"fake","cloudProviderSpec":{"passValidation":true},"operatingSystem":"ubuntu"}`

// build compiles fake.c with build.sh (clang + wasi-libc).
func build(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("clang"); err != nil {
		t.Fatalf("clang is needed to build examples/c-fake (Debian: clang lld wasi-libc libclang-rt-dev-wasm32): %v", err)
	}
	out := filepath.Join(t.TempDir(), "c-fake.wasm")
	cmd := exec.Command(filepath.Join(testguest.Root(), "examples", "c-fake", "build.sh"), out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building examples/c-fake: %v\n%s", err, b)
	}
	return out
}

// The C fake keeps its state on the Machine (machine_update), so it passes
// the stateful profile, the default, with every check run — and with a
// fresh instance for every call, since SPEC §1 lets the host discard one
// at any time.
func TestCFakeStateful(t *testing.T) {
	rep := conformance.RunT(t, conformance.Config{
		Module:              build(t),
		Name:                "c-fake",
		ProviderSpec:        json.RawMessage(spec),
		Policy:              runtime.Policy{MaxCallsPerInstance: 1},
		FuzzMachines:        240,
		CompilationCacheDir: testguest.CompilationCacheDir(t),
		Engine:              testhost.Engine(),
	})
	// Only the faults profile's checks are skipped: they run in that
	// profile, and find no HTTP request to inject a fault into anyway.
	faults := 0
	for _, c := range conformance.Checks {
		if c.Faults {
			faults++
		}
	}
	if c := rep.Counts(); c.Pass != len(conformance.Checks)-faults || c.Skip != faults {
		t.Errorf("stateful profile: %+v; want all %d checks but the %d of the faults profile to pass (no warning)", c, len(conformance.Checks), faults)
	}
}
