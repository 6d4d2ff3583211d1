//go:build !wasip1

package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/conformance"
	"github.com/wasmprov/wasmprov/examples/digitalocean/dosim"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
)

// conformanceSpec is the providerSpec.value the conformance suite runs
// with: upstream's example Machine (examples/digitalocean-
// machinedeployment.yaml), its token in a Secret, with an available size.
// It names no endpoint and no simulator: the policy's host alias sends
// api.digitalocean.com to one.
const conformanceSpec = `{
  "sshPublicKeys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIConformance conformance@wasmprov"],
  "cloudProvider": "digitalocean",
  "cloudProviderSpec": {
    "token": {"secretKeyRef": {"namespace": "kube-system", "name": "digitalocean", "key": "token"}},
    "region": "fra1",
    "size": "s-1vcpu-2gb",
    "backups": false,
    "ipv6": false,
    "private_networking": true,
    "monitoring": false,
    "tags": ["machine-controller"]
  },
  "operatingSystem": "ubuntu",
  "operatingSystemSpec": {"disableAutoUpdate": true}
}`

// The provider passes the default (stateful) conformance profile, and the
// faults profile (transport faults injected into one request of a call
// at a time), live against the simulator, reached only through the host
// alias of api.digitalocean.com; each run leaves no droplet and no SSH key
// behind.
func TestConformance(t *testing.T) {
	for _, profile := range []conformance.Profile{conformance.ProfileStateful, conformance.ProfileFaults} {
		t.Run(string(profile), func(t *testing.T) { runConformance(t, profile) })
	}
}

func runConformance(t *testing.T, profile conformance.Profile) {
	// The faults profile's retries outrun DigitalOcean's burst limit of
	// 250 requests a minute.
	sim, err := dosim.Start(dosim.Options{Token: simToken, BurstLimit: 100000}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	rep, err := conformance.Run(t.Context(), conformance.Config{
		Module:              testguest.Build(t, guestDir),
		Name:                "digitalocean",
		ProviderSpec:        json.RawMessage(conformanceSpec),
		Profile:             profile,
		Policy:              policy(sim.URL),
		Kube:                kube(),
		CompilationCacheDir: testguest.CompilationCacheDir(t),
		Engine:              testhost.Engine(),
		Logger:              logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = rep.WriteText(&text)
	if !rep.Passed() || rep.Profile != profile {
		t.Fatalf("conformance failed (%v):\n%s", rep.Failed(), text.String())
	}
	if c := rep.Counts(); c.Fail != 0 || c.Warn != 0 || (profile == conformance.ProfileFaults && c.Skip != 0) {
		t.Errorf("counts %+v, want no failure, no warning (and with faults, no skip):\n%s", c, text.String())
	}
	// The checks that need a cloud that remembers ran, and passed.
	for _, id := range []string{"validate.accepts-valid", "get.unknown-not-found", "create.get-same-id", "create.idempotent",
		"delete.missing-ok", "delete.removes", "migrate-uid.get-by-new-uid", "metrics.size-label",
		"concurrency.independent", "robustness.no-panics"} {
		if r := rep.Result(id); r == nil || r.Status != conformance.Pass {
			t.Errorf("%s did not pass:\n%s", id, text.String())
		}
	}
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
}
