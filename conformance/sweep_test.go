package conformance_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/conformance"
)

// A run killed half-way (here: its context cancelled as soon as the cloud
// made the first instance) leaves the instance in the cloud and the
// Machine in its journal; the report lists it, the next run reports it,
// and a sweep deletes it with the provider's own Delete.
func TestKilledRunIsSwept(t *testing.T) {
	cloud, url := startCloud(t)
	ctx, kill := context.WithCancel(t.Context())
	defer kill()
	cloud.OnCreate = kill
	cfg := refConfig(t, "conformance/testdata/refcloud")
	cfg.CloudURL, cfg.Journal = url, filepath.Join(t.TempDir(), "journal.json")
	cfg.Checks = []string{"create.get-same-id"}
	rep, err := conformance.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(cloud.Instances()) != 1 || len(rep.Leftovers) != 1 || rep.Leftovers[0].Error == "" || rep.Passed() {
		t.Fatalf("killed run: %d instances in the cloud, leftovers %+v, passed %v; want one of each, not passed\n%s",
			len(cloud.Instances()), rep.Leftovers, rep.Passed(), text(rep))
	}
	if b, err := os.ReadFile(cfg.Journal); err != nil || strings.Contains(string(b), refToken) {
		t.Errorf("the journal is missing (%v) or holds the token", err)
	}
	if !strings.Contains(text(rep), "--sweep") {
		t.Errorf("the report does not say how to remove the leftover:\n%s", text(rep))
	}

	// The next run (other checks) reports the earlier run's leftover.
	cfg.Checks = []string{"validate."}
	rep, err = conformance.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Leftovers) != 1 || rep.Leftovers[0].Error != "" || !rep.Passed() {
		t.Fatalf("the next run's leftovers: %+v (passed %v)", rep.Leftovers, rep.Passed())
	}

	cfg.Sweep = true
	rep, err = conformance.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if left := cloud.Instances(); len(left) != 0 || len(rep.Swept) != 1 || len(rep.Leftovers) != 0 {
		t.Fatalf("after the sweep: instances %+v, swept %+v, leftovers %+v", left, rep.Swept, rep.Leftovers)
	}
	if _, err := os.Stat(cfg.Journal); !os.IsNotExist(err) {
		t.Errorf("the journal is still there after a complete sweep: %v", err)
	}
	if len(rep.Results) != 0 {
		t.Errorf("a sweep ran %d checks", len(rep.Results))
	}
}

// A sweep that cannot delete says which Machine and why.
func TestSweepReportsWhatItCannotRemove(t *testing.T) {
	cloud, url := startCloud(t)
	cfg := refConfig(t, "conformance/testdata/refcloud")
	cfg.CloudURL, cfg.Journal = url, filepath.Join(t.TempDir(), "journal.json")
	cfg.Checks = []string{"create.get-same-id"}
	ctx, kill := context.WithCancel(t.Context())
	cloud.OnCreate = kill
	if _, err := conformance.Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	cloud.OnCreate = nil
	cfg.Sweep = true
	cfg.ProviderSpec = []byte(strings.Replace(refSpec, refToken, "wrong-token", 1))
	rep, err := conformance.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Leftovers) != 1 || !strings.Contains(rep.Leftovers[0].Error, "401") || rep.Passed() {
		t.Fatalf("leftovers %+v, passed %v:\n%s", rep.Leftovers, rep.Passed(), text(rep))
	}
	if len(cloud.Instances()) != 1 {
		t.Fatalf("%d instances", len(cloud.Instances()))
	}
}
