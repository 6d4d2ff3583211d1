package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/runtime"
)

// RunT runs the suite from a provider's own tests: every check becomes a
// subtest that passes, fails with the check's explanation, or is skipped.
// A warning (a SHOULD not met) is logged, not failed. A Machine the run
// could not delete (Report.Leftovers) fails the test.
// When $WASMPROV_CONFORMANCE_REPORTS names a directory, the JUnit XML and
// JSON reports are written there too (for CI). A Config without an Engine
// runs on the engine $WASMPROV_ENGINE names (runtime.EngineEnv), so a
// provider's suite runs on wasmtime with WASMPROV_ENGINE=wasmtime go test
// -tags wasmtime.
func RunT(t *testing.T, cfg Config) *Report {
	t.Helper()
	if cfg.Engine == "" {
		cfg.Engine = runtime.Engine(os.Getenv(runtime.EngineEnv))
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("conformance run did not start: %v", err)
	}
	if dir := os.Getenv("WASMPROV_CONFORMANCE_REPORTS"); dir != "" {
		writeReports(t, dir, rep)
	}
	for _, res := range rep.Results {
		t.Run(res.ID, func(t *testing.T) {
			for _, n := range res.Notes {
				t.Log("note: " + n)
			}
			switch res.Status {
			case Fail:
				t.Errorf("%s\n%s\nwhy it matters: %s", res.Title, res.Message, res.Why)
			case Warn:
				t.Logf("warning (SHOULD): %s\n%s\nwhy it matters: %s", res.Title, res.Message, res.Why)
			case Skip:
				t.Skip(res.Message)
			}
		})
	}
	for _, l := range rep.Leftovers {
		if l.Error != "" {
			t.Errorf("Machine %s (uid %s, check %s) may still have an instance in the cloud: %s", l.Machine, l.UID, l.Check, l.Error)
		} else {
			t.Logf("an earlier run's Machine %s (uid %s, check %s) may still have an instance in the cloud: sweep it (Config.Sweep)", l.Machine, l.UID, l.Check)
		}
	}
	return rep
}

func writeReports(t *testing.T, dir string, rep *Report) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Errorf("reports: %v", err)
		return
	}
	base := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+"-"+rep.Provider)
	for ext, write := range map[string]func(*os.File) error{
		".junit.xml": func(f *os.File) error { return rep.WriteJUnit(f) },
		".json":      func(f *os.File) error { return rep.WriteJSON(f) },
	} {
		f, err := os.Create(base + ext)
		if err != nil {
			t.Errorf("reports: %v", err)
			continue
		}
		if err := write(f); err != nil {
			t.Errorf("reports: %v", err)
		}
		f.Close()
	}
}
