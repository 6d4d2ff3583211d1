package conformance_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/cassette"
	"github.com/wasmprov/wasmprov/conformance"
	"github.com/wasmprov/wasmprov/conformance/internal/minicloud"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
)

const refToken = "t0k3n-s3cr3t"

const refSpec = `{"cloudProvider":"minicloud","operatingSystem":"ubuntu",
 "cloudProviderSpec":{"endpoint":"${CLOUD_URL}","token":"` + refToken + `"}}`

// startCloud serves a fresh mini cloud on 127.0.0.1.
func startCloud(t *testing.T) (*minicloud.Cloud, string) {
	c := minicloud.New(refToken)
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv.URL
}

func refConfig(t *testing.T, dir string) conformance.Config {
	return conformance.Config{
		Module:              testguest.Build(t, dir),
		ProviderSpec:        json.RawMessage(refSpec),
		CompilationCacheDir: testguest.CompilationCacheDir(t),
		Engine:              testhost.Engine(),
		Redact:              cassette.Redaction{Secrets: []string{refToken}},
	}
}

func text(rep *conformance.Report) string {
	var b bytes.Buffer
	_ = rep.WriteText(&b)
	return b.String()
}

// The reference provider passes every check, stateful, against a live
// (in-process) cloud.
func TestRefcloudLive(t *testing.T) {
	cfg := refConfig(t, "conformance/testdata/refcloud")
	_, cfg.CloudURL = startCloud(t)
	rep := conformance.RunT(t, cfg)
	faults := 0
	for _, c := range conformance.Checks {
		if c.Faults {
			faults++
		}
	}
	if c := rep.Counts(); c.Skip != faults || c.Warn != 0 {
		t.Errorf("%d checks skipped (want the %d of the faults profile) and %d warned in the stateful profile", c.Skip, faults, c.Warn)
	}
}

// The reference provider passes the faults profile live and from a
// cassette recorded with the faults injected, and leaves nothing in the
// cloud.
func TestRefcloudFaults(t *testing.T) {
	t.Parallel() // mostly waiting on held responses
	cloud, url := startCloud(t)
	cfg := refConfig(t, "conformance/testdata/refcloud")
	cfg.Profile, cfg.CloudURL = conformance.ProfileFaults, url
	cfg.Checks = []string{"faults."}
	rep := conformance.RunT(t, cfg)
	if c := rep.Counts(); c.Pass != 3 {
		t.Fatalf("%d fault checks passed, want 3:\n%s", c.Pass, text(rep))
	}
	if left := cloud.Instances(); len(left) != 0 {
		t.Fatalf("the faults profile left %d instances: %+v", len(left), left)
	}
	cfg.Cassette, cfg.Record = filepath.Join(t.TempDir(), "faults.json"), true
	conformance.RunT(t, cfg)
	cfg.Record, cfg.CloudURL = false, ""
	conformance.RunT(t, cfg)
}

// Recording against the cloud and replaying offline gives the same
// verdicts; the cassette holds no secret; a provider whose traffic differs
// from the cassette fails with a diff.
func TestRefcloudRecordReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "refcloud.cassette.json")
	cfg := refConfig(t, "conformance/testdata/refcloud")
	_, cfg.CloudURL = startCloud(t)
	cfg.Cassette, cfg.Record = path, true
	rec, err := conformance.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Passed() {
		t.Fatalf("recording run failed:\n%s", text(rec))
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(refToken)) {
		t.Fatal("the cassette contains the token")
	}
	if !bytes.Contains(raw, []byte(conformance.CanonicalCloudURL)) {
		t.Fatal("the cassette does not use the canonical cloud URL")
	}

	// Offline: no cloud URL at all.
	cfg.CloudURL, cfg.Record = "", false
	for range 2 {
		rep, err := conformance.Run(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Passed() {
			t.Fatalf("replay failed:\n%s", text(rep))
		}
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(raw, after) {
		t.Fatal("replaying modified the cassette")
	}

	// A provider that behaves differently meets the cassette's diff.
	bad := refConfig(t, "conformance/testdata/broken/shared-name")
	bad.Cassette = path
	rep, err := conformance.Run(t.Context(), bad)
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Result("concurrency.independent")
	if res.Status != conformance.Fail || !strings.Contains(res.Message, "differs from the cassette") ||
		!strings.Contains(res.Message, "--- recorded") || !strings.Contains(res.Message, `+   "name": "worker"`) {
		t.Fatalf("replay of a diverging provider did not fail with a diff:\n%s", text(rep))
	}
}

// brokenProviders maps each deliberately broken provider to the check
// built to catch it. Together they make every check fail (a SHOULD check:
// warn) at least once. A directory with a provider.wat is a WAT module.
var brokenProviders = map[string]string{
	"bad-abi":                 "abi.module",
	"undeclared-capability":   "abi.capabilities",
	"unused-capability":       "abi.no-unused-capabilities",
	"forgets-key":             "create.get-same-id",
	"defaults-not-idempotent": "add-defaults.idempotent",
	"rejects-valid":           "validate.accepts-valid",
	"accepts-empty":           "validate.rejects-empty",
	"garbage-transient":       "validate.rejects-garbage",
	"get-error-not-found":     "get.unknown-not-found",
	"get-wrong-id":            "create.get-same-id",
	"create-duplicates":       "create.idempotent",
	"delete-missing-fails":    "delete.missing-ok",
	"delete-noop":             "delete.removes",
	"delete-never-done":       "delete.removes",
	"migrate-noop":            "migrate-uid.get-by-new-uid",
	"no-size-label":           "metrics.size-label",
	"shared-name":             "concurrency.independent",
	"panics-on-short-name":    "robustness.no-panics",
	"migrate-keeps-old-uid":   "migrate-uid.old-uid-forgotten",
	"nil-response-on-fault":   "faults.create",
	"not-found-on-fault":      "faults.get",
	"delete-ignores-errors":   "faults.delete",
}

func TestEveryCheckHasABrokenProvider(t *testing.T) {
	caught := map[string]bool{}
	for _, id := range brokenProviders {
		caught[id] = true
	}
	// sandbox.random-per-instance checks the host: TestRandomPerInstance
	// shows it failing for a probe with a fixed stream.
	caught["sandbox.random-per-instance"] = true
	for _, c := range conformance.Checks {
		if !caught[c.ID] {
			t.Errorf("no broken provider demonstrates that check %s can fail", c.ID)
		}
	}
	entries, err := os.ReadDir("testdata/broken")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := brokenProviders[e.Name()]; !ok {
			t.Errorf("testdata/broken/%s is not in brokenProviders", e.Name())
		}
	}
}

func TestBrokenProviders(t *testing.T) {
	names := make([]string, 0, len(brokenProviders))
	for n := range brokenProviders {
		names = append(names, n)
	}
	slices.Sort(names)
	// Build serially first (testguest.Build serialises anyway), then run
	// the suites in parallel.
	mods := map[string]string{}
	for _, n := range names {
		if wat := "testdata/broken/" + n + "/provider.wat"; fileExists(wat) {
			mods[n] = wat2wasm(t, wat)
			continue
		}
		mods[n] = testguest.Build(t, "conformance/testdata/broken/"+n)
	}
	for _, n := range names {
		want := brokenProviders[n]
		status := conformance.Fail
		if levelOf(want) == conformance.Should {
			status = conformance.Warn
		}
		t.Run(n, func(t *testing.T) {
			t.Parallel()
			cfg := refConfig(t, "conformance/testdata/refcloud")
			cfg.Module, cfg.Name = mods[n], n
			cloud, url := startCloud(t)
			cfg.CloudURL = url
			if strings.HasPrefix(want, "faults.") {
				cfg.Profile, cfg.Checks = conformance.ProfileFaults, []string{want}
			}
			rep, err := conformance.Run(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if r := rep.Result(want); r == nil || r.Status != status {
				t.Fatalf("%s was not caught by %s (want status %s):\n%s", n, want, status, text(rep))
			}
			if r := rep.Result(want); r.Message == "" || r.Why == "" {
				t.Errorf("failure of %s carries no explanation", want)
			}
			if r := rep.Result(want); n == "delete-never-done" && !strings.Contains(r.Message, "Delete stayed in progress") {
				t.Errorf("a Delete in progress forever is not named as such: %s", r.Message)
			}
			// A failing check never leaves the cloud dirty unnoticed: what
			// is left is listed as not deleted.
			if left := cloud.Instances(); len(left) > 0 {
				reported := 0
				for _, l := range rep.Leftovers {
					if l.Error != "" {
						reported++
					}
				}
				if reported == 0 {
					t.Errorf("the run left %d instances in the cloud and reported none: %+v", len(left), left)
				}
			}
			t.Logf("failed: %v\n%s", rep.Failed(), text(rep))
		})
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func levelOf(id string) conformance.Level {
	for _, c := range conformance.Checks {
		if c.ID == id {
			return c.Level
		}
	}
	return ""
}

func wat2wasm(t *testing.T, src string) string {
	t.Helper()
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		t.Fatalf("wat2wasm (Debian package wabt) is needed: %v", err)
	}
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(src), ".wat")+".wasm")
	if b, err := exec.Command("wat2wasm", src, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm %s: %v\n%s", src, err, b)
	}
	return out
}
