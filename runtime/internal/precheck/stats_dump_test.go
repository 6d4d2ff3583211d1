package precheck

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDumpStats prints Measure for the .wasm files in
// $WASMPROV_PRECHECK_DUMP (a directory).
func TestDumpStats(t *testing.T) {
	dir := os.Getenv("WASMPROV_PRECHECK_DUMP")
	if dir == "" {
		t.Skip("WASMPROV_PRECHECK_DUMP not set")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.wasm"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		st, err := Measure(b)
		t.Logf("%s (%v): %+v err=%v", filepath.Base(f), time.Since(start), st, err)
	}
}
