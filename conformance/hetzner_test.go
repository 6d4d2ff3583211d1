package conformance_test

import (
	"encoding/json"
	"flag"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/cassette"
	"github.com/wasmprov/wasmprov/conformance"
	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
)

var record = flag.Bool("record", false, "re-record the committed cassettes from the simulators")

const hetznerToken = "sim-token"

const hetznerSpec = `{"cloudProvider":"hetzner","operatingSystem":"ubuntu","operatingSystemSpec":{"distUpgradeOnBoot":false},"sshPublicKeys":["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIConformance conformance@wasmprov"],
 "cloudProviderSpec":{"token":"` + hetznerToken + `","serverType":"cx22","location":"fsn1","image":"ubuntu-24.04","endpoint":"${CLOUD_URL}/v1"}}`

const hetznerCassette = "testdata/cassettes/hetzner.json"

func hetznerConfig(t *testing.T) conformance.Config {
	return conformance.Config{
		Module:              testguest.Build(t, "examples/hetzner"),
		Name:                "hetzner",
		ProviderSpec:        json.RawMessage(hetznerSpec),
		CompilationCacheDir: testguest.CompilationCacheDir(t),
		Engine:              testhost.Engine(),
		Redact:              cassette.Redaction{Secrets: []string{hetznerToken}},
		// Each Create makes a temporary SSH key pair (as upstream does, so
		// that Hetzner mails no root password): its name and key are random.
		Ignore: []cassette.Ignore{{Method: "POST", Path: "/ssh_keys", Fields: []string{"name", "public_key"}}},
	}
}

func startHetzner(t *testing.T) string {
	// Each deleted server is seen deleting once: every Delete of the
	// async_delete provider answers IN_PROGRESS before it is done, the
	// same way live and in the cassette.
	sim := hcloudsim.New(hcloudsim.Options{Token: hetznerToken, BootDuration: 50 * time.Millisecond, ActionDuration: 20 * time.Millisecond,
		DeleteReads: 1})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return srv.URL
}

// The Hetzner provider, stateful, against a live simulator.
func TestHetznerLive(t *testing.T) {
	cfg := hetznerConfig(t)
	cfg.CloudURL = startHetzner(t)
	conformance.RunT(t, cfg)
}

// The Hetzner provider replayed offline from the committed cassette
// (re-record with: go test ./conformance -run TestHetznerReplay -record).
func TestHetznerReplay(t *testing.T) {
	cfg := hetznerConfig(t)
	cfg.Cassette = hetznerCassette
	if *record {
		cfg.CloudURL, cfg.Record = startHetzner(t), true
		if err := os.MkdirAll("testdata/cassettes", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	conformance.RunT(t, cfg)
}

// The Hetzner provider under transport faults, against a live simulator.
func TestHetznerFaults(t *testing.T) {
	t.Parallel() // mostly waiting on held responses
	cfg := hetznerConfig(t)
	cfg.CloudURL = startHetzner(t)
	cfg.Profile, cfg.Checks = conformance.ProfileFaults, []string{"faults."}
	conformance.RunT(t, cfg)
}
