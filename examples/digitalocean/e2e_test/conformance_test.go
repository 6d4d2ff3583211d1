//go:build !wasip1

package e2e

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/cassette"
	"github.com/wasmprov/wasmprov/conformance"
	"github.com/wasmprov/wasmprov/examples/digitalocean/dosim"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
)

// conformanceSpec is the providerSpec.value the conformance suite runs
// with (testdata/spec.json, which the README's CLI commands use too):
// upstream's example Machine (examples/digitalocean-machinedeployment.yaml)
// with an available size, its token in testdata/secret.yaml's Secret. It
// names no endpoint and no simulator: the policy's host alias sends
// api.digitalocean.com to one.
var conformanceSpec = readTestdata("spec.json")

// record re-records the cassettes TestConformanceReplay replays.
var record = flag.Bool("record", false, "re-record testdata/cassettes from the simulator")

// conformanceConfig is the run's configuration, for a live run against
// the simulator at simURL ("" for a replay: no alias, nothing listens).
func conformanceConfig(t *testing.T, profile conformance.Profile, simURL string) conformance.Config {
	cfg := conformance.Config{
		Module:              testguest.Build(t, guestDir),
		Name:                "digitalocean",
		ProviderSpec:        conformanceSpec,
		Profile:             profile,
		Policy:              policy(simURL),
		Kube:                kube(),
		CompilationCacheDir: testguest.CompilationCacheDir(t),
		Engine:              testhost.Engine(),
		Logger:              logger(),
		// The token is in the Secret; keep it out of a recording.
		Redact: cassette.Redaction{Secrets: []string{simToken}},
		// Each Create uploads a fresh key pair (as upstream), under a
		// random name.
		Ignore: []cassette.Ignore{{Method: "POST", Path: "/v2/account/keys", Fields: []string{"name", "public_key"}}},
	}
	return cfg
}

// startSim starts a simulator for a conformance run. The faults
// profile's retries outrun DigitalOcean's burst limit of 250 requests a
// minute.
func startSim(t *testing.T) *dosim.Running {
	sim, err := dosim.Start(dosim.Options{Token: simToken, BurstLimit: 100000}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}

var profiles = []conformance.Profile{conformance.ProfileStateful, conformance.ProfileFaults}

// The provider passes the default (stateful) conformance profile, and the
// faults profile (transport faults injected into one request of a call
// at a time), live against the simulator, reached only through the host
// alias of api.digitalocean.com; each run leaves no droplet and no SSH key
// behind.
func TestConformance(t *testing.T) {
	for _, profile := range profiles {
		t.Run(string(profile), func(t *testing.T) {
			sim := startSim(t)
			rep, err := conformance.Run(t.Context(), conformanceConfig(t, profile, sim.URL))
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, rep, profile)
			// It did reach the simulator, and made droplets there.
			created := 0
			for _, r := range sim.Requests() {
				if r.Method == "POST" && r.Path == "/v2/droplets" && r.Status == 202 {
					created++
				}
			}
			if created == 0 {
				t.Errorf("no droplet was created through the alias: %v", sim.Requests())
			}
			expectEmpty(t, sim.Sim)
			t.Logf("%s: %d droplets created in %s", profile, created, rep.Duration)
		})
	}
}

// The same runs replayed offline from the committed cassettes, recorded
// through the alias (re-record: go test ./e2e_test -run
// TestConformanceReplay -record).
func TestConformanceReplay(t *testing.T) {
	for _, profile := range profiles {
		t.Run(string(profile), func(t *testing.T) {
			cfg := conformanceConfig(t, profile, "")
			cfg.Cassette = filepath.Join("..", "testdata", "cassettes", string(profile)+".json")
			if *record {
				sim := startSim(t)
				cfg.Policy, cfg.Record = policy(sim.URL), true
				if err := os.MkdirAll(filepath.Dir(cfg.Cassette), 0o755); err != nil {
					t.Fatal(err)
				}
				defer expectEmpty(t, sim.Sim)
			}
			rep, err := conformance.Run(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, rep, profile)
		})
	}
}

// checkReport requires every check to pass (with faults, none skipped),
// the stateful ones among them.
func checkReport(t *testing.T, rep *conformance.Report, profile conformance.Profile) {
	t.Helper()
	var text strings.Builder
	_ = rep.WriteText(&text)
	if !rep.Passed() || rep.Profile != profile {
		t.Fatalf("conformance failed (%v):\n%s", rep.Failed(), text.String())
	}
	if c := rep.Counts(); c.Fail != 0 || c.Warn != 0 || (profile == conformance.ProfileFaults && c.Skip != 0) {
		t.Errorf("counts %+v, want no failure, no warning (and with faults, no skip):\n%s", c, text.String())
	}
	for _, id := range []string{"validate.accepts-valid", "get.unknown-not-found", "create.get-same-id", "create.idempotent",
		"delete.missing-ok", "delete.removes", "migrate-uid.get-by-new-uid", "metrics.size-label",
		"concurrency.independent", "robustness.no-panics"} {
		if r := rep.Result(id); r == nil || r.Status != conformance.Pass {
			t.Errorf("%s did not pass:\n%s", id, text.String())
		}
	}
}
