//go:build !wasip1

// Package watfake holds only the test of the WAT guest in this directory:
// fake.wasm, assembled from fake.wat (internal/fixtures checks that the
// two agree), passes the conformance suite in both profiles.
package watfake

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/wasmprov/wasmprov/conformance"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/runtime"
)

// spec is a providerSpec.value the guest accepts: any object whose
// cloudProviderSpec is an object.
const spec = `{"cloudProviderSpec":{}}`

func run(t *testing.T, profile conformance.Profile) *conformance.Report {
	t.Helper()
	return conformance.RunT(t, conformance.Config{
		Module:       filepath.Join(testguest.Root(), "examples", "wat-fake", "fake.wasm"),
		Name:         "wat-fake",
		ProviderSpec: json.RawMessage(spec),
		Profile:      profile,
		// A fresh instance for every call: the guest keeps its state on
		// the Machine (machine_update), never in the instance, which
		// SPEC §1 says the host may discard at any time.
		Policy:              runtime.Policy{MaxCallsPerInstance: 1},
		FuzzMachines:        240,
		CompilationCacheDir: testguest.CompilationCacheDir(t),
		Engine:              testhost.Engine(),
	})
}

// The stateful profile (the default) runs every check but the faults
// profile's, and passes them.
func TestWatFakeStateful(t *testing.T) {
	rep := run(t, conformance.ProfileStateful)
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

// The stateless profile skips exactly the checks that need state.
func TestWatFakeStateless(t *testing.T) {
	rep := run(t, conformance.ProfileStateless)
	stateful := 0
	for _, c := range conformance.Checks {
		if c.Stateful {
			stateful++
		}
	}
	if c := rep.Counts(); c.Skip != stateful || c.Pass+c.Skip != len(conformance.Checks) {
		t.Errorf("stateless profile: %+v; want %d skipped and the rest passed (no warning)", c, stateful)
	}
}
