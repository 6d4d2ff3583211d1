package precheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/race"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// realGuest is a provider module built from this repository.
type realGuest struct {
	name string
	wasm []byte
	st   Stats // Measure's
	err  error
}

var (
	guestsOnce sync.Once
	guests     []realGuest
)

// realGuests builds the Go example providers (and, under -short, only
// the small one), the hcloud-go one, and the C one when clang is there.
func realGuests(t testing.TB) []realGuest {
	t.Helper()
	guestsOnce.Do(func() {
		dirs := []string{"examples/fake", "examples/hostcalls", "examples/hetzner", "examples/hetzner-hcloudgo"}
		if testing.Short() {
			dirs = dirs[:1]
		}
		for _, d := range dirs {
			b, err := os.ReadFile(testguest.Build(t, d))
			if err != nil {
				t.Fatal(err)
			}
			guests = append(guests, realGuest{name: filepath.Base(d), wasm: b})
		}
		if _, err := exec.LookPath("clang"); err == nil {
			out := filepath.Join(testguest.CacheDir(t), "guests", "precheck-c-fake.wasm")
			cmd := exec.Command(filepath.Join(testguest.Root(), "examples", "c-fake", "build.sh"), out)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Logf("building examples/c-fake (skipped): %v\n%s", err, b)
			} else if b, err := os.ReadFile(out); err == nil {
				guests = append(guests, realGuest{name: "c-fake", wasm: b})
			}
		}
	})
	if len(guests) == 0 {
		t.Fatal("no guests built")
	}
	for i := range guests {
		if g := &guests[i]; g.st.ModuleBytes == 0 && g.err == nil {
			g.st, g.err = Measure(g.wasm)
		}
	}
	return guests
}

// TestRealGuests: every real guest passes with the defaults and comes
// back byte-identical but for its tables, which get MaxTableEntries as
// maximum; the rewritten module compiles on wazero (the guests under 4
// MB, under 1 MB with the race detector; WASMPROV_PRECHECK_COMPILE_ALL=1:
// all).
func TestRealGuests(t *testing.T) {
	for _, g := range realGuests(t) {
		t.Run(g.name, func(t *testing.T) {
			out, err := Check(g.wasm, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if g.st.TablesRewritten == 0 {
				if &out[0] != &g.wasm[0] {
					t.Errorf("nothing to rewrite, but a copy")
				}
			} else {
				sameButTables(t, g.wasm, out)
			}
			small := len(g.wasm) < 4<<20 && (!race.Enabled || len(g.wasm) < 1<<20)
			if small || os.Getenv("WASMPROV_PRECHECK_COMPILE_ALL") != "" {
				if _, err := compileWazero(t, out); err != nil {
					t.Errorf("wazero does not compile the checked module: %v", err)
				}
			}
		})
	}
}

// sameButTables checks that out has in's sections, byte for byte, but
// for the table section, whose tables have the same types and minimums
// and MaxTableEntries as maximum.
func sameButTables(t *testing.T, in, out []byte) {
	t.Helper()
	a, _ := wasmbin.NewSections(in)
	b, _ := wasmbin.NewSections(out)
	for {
		var sa, sb wasmbin.Section
		okA, errA := a.Next(&sa)
		okB, errB := b.Next(&sb)
		if errA != nil || errB != nil || okA != okB {
			t.Fatalf("sections differ: %v %v %v %v", okA, okB, errA, errB)
		}
		if !okA {
			return
		}
		if sa.ID != sb.ID {
			t.Fatalf("section %d became %d", sa.ID, sb.ID)
		}
		if sa.ID != wasmbin.SectionIDTable {
			if !bytes.Equal(sa.Body, sb.Body) {
				t.Errorf("%s section changed", wasmbin.SectionIDName(sa.ID))
			}
			continue
		}
		ta, tb := tables(t, in), tables(t, out)
		for i := range ta {
			if ta[i].Min != tb[i].Min || !tb[i].HasMax() || tb[i].Max > uint64(DefaultLimits.MaxTableEntries) {
				t.Errorf("table %d: %+v became %+v", i, ta[i], tb[i])
			}
		}
	}
}

// TestDefaultsOverRealGuests prints, for each limit, the largest value in
// the real guests, and checks the default has at least 4 times that
// headroom, but for the limits set by the worst case's compile time
// (MaxModuleBytes, MaxFlowUnits, MaxFlowWork, MaxModuleFlowUnits), which
// need 1.5 times.
func TestDefaultsOverRealGuests(t *testing.T) {
	var m Stats
	for _, g := range realGuests(t) {
		st, err := g.st, g.err
		if err != nil {
			t.Fatalf("%s: %v", g.name, err)
		}
		t.Logf("%s: %+v", g.name, st)
		m.ModuleBytes = max(m.ModuleBytes, st.ModuleBytes)
		m.Types = max(m.Types, st.Types)
		m.MaxTypeParams = max(m.MaxTypeParams, st.MaxTypeParams)
		m.MaxTypeResults = max(m.MaxTypeResults, st.MaxTypeResults)
		m.Imports = max(m.Imports, st.Imports)
		m.Functions = max(m.Functions, st.Functions)
		m.Tables = max(m.Tables, st.Tables)
		m.Tags = max(m.Tags, st.Tags)
		m.Globals = max(m.Globals, st.Globals)
		m.Exports = max(m.Exports, st.Exports)
		m.ElementSegments = max(m.ElementSegments, st.ElementSegments)
		m.Elements = max(m.Elements, st.Elements)
		m.DataSegments = max(m.DataSegments, st.DataSegments)
		m.DataBytes = max(m.DataBytes, st.DataBytes)
		m.MaxTableMin = max(m.MaxTableMin, st.MaxTableMin)
		m.TableEntries = max(m.TableEntries, st.TableEntries)
		m.MaxFunctionBytes = max(m.MaxFunctionBytes, st.MaxFunctionBytes)
		m.MaxLocals = max(m.MaxLocals, st.MaxLocals)
		m.MaxNesting = max(m.MaxNesting, st.MaxNesting)
		m.MaxBrTableTargets = max(m.MaxBrTableTargets, st.MaxBrTableTargets)
		m.MaxLoops = max(m.MaxLoops, st.MaxLoops)
		m.MaxInstructions = max(m.MaxInstructions, st.MaxInstructions)
		m.MaxFlowUnits = max(m.MaxFlowUnits, st.MaxFlowUnits)
		m.FlowWork = max(m.FlowWork, st.FlowWork)
		m.FlowUnits = max(m.FlowUnits, st.FlowUnits)
		m.BulkInstructions = max(m.BulkInstructions, st.BulkInstructions)
		m.MaxLocalsWork = max(m.MaxLocalsWork, st.MaxLocalsWork)
		m.LocalsWork = max(m.LocalsWork, st.LocalsWork)
		m.MemoryAccesses = max(m.MemoryAccesses, st.MemoryAccesses)
		m.MaxMemoryAccesses = max(m.MaxMemoryAccesses, st.MaxMemoryAccesses)
	}
	d := DefaultLimits
	for _, r := range []struct {
		name          string
		real, def     int
		minHeadroomX2 int // twice the headroom required
	}{
		{"MaxModuleBytes", m.ModuleBytes, d.MaxModuleBytes, 3},
		{"MaxTypes", m.Types, d.MaxTypes, 8},
		{"MaxTypeParams", m.MaxTypeParams, d.MaxTypeParams, 8},
		{"MaxTypeResults", m.MaxTypeResults, d.MaxTypeResults, 8},
		{"MaxImports", m.Imports, d.MaxImports, 8},
		{"MaxFunctions", m.Functions, d.MaxFunctions, 8},
		{"MaxTables", m.Tables, d.MaxTables, 8},
		{"MaxTags", m.Tags, d.MaxTags, 8},
		{"MaxGlobals", m.Globals, d.MaxGlobals, 8},
		{"MaxExports", m.Exports, d.MaxExports, 8},
		{"MaxElementSegments", m.ElementSegments, d.MaxElementSegments, 8},
		{"MaxElements", m.Elements, d.MaxElements, 8},
		{"MaxDataSegments", m.DataSegments, d.MaxDataSegments, 8},
		{"MaxDataBytes", m.DataBytes, d.MaxDataBytes, 8},
		{"MaxTableEntries", m.MaxTableMin, d.MaxTableEntries, 8},
		{"MaxInitialTableEntries", m.TableEntries, d.MaxInitialTableEntries, 8},
		{"MaxFunctionBytes", m.MaxFunctionBytes, d.MaxFunctionBytes, 8},
		{"MaxLocals", m.MaxLocals, d.MaxLocals, 8},
		{"MaxNesting", m.MaxNesting, d.MaxNesting, 8},
		{"MaxBrTableTargets", m.MaxBrTableTargets, d.MaxBrTableTargets, 8},
		{"MaxLoops", m.MaxLoops, d.MaxLoops, 8},
		{"MaxInstructions", m.MaxInstructions, d.MaxInstructions, 8},
		{"MaxFlowUnits", m.MaxFlowUnits, d.MaxFlowUnits, 3},
		{"MaxFlowWork", m.FlowWork, d.MaxFlowWork, 3},
		{"MaxModuleFlowUnits", m.FlowUnits, d.MaxModuleFlowUnits, 3},
		{"MaxBulkInstructions", m.BulkInstructions, d.MaxBulkInstructions, 8},
		{"MaxLocalsWork", m.MaxLocalsWork, d.MaxLocalsWork, 8},
		{"MaxModuleLocalsWork", m.LocalsWork, d.MaxModuleLocalsWork, 8},
		{"MaxMemoryAccesses", m.MaxMemoryAccesses, d.MaxMemoryAccesses, 8},
		{"MaxModuleMemoryAccesses", m.MemoryAccesses, d.MaxModuleMemoryAccesses, 3},
	} {
		t.Logf("%-23s largest real %12d  default %12d  (%.1fx)", r.name, r.real, r.def, float64(r.def)/float64(max(r.real, 1)))
		if 2*r.def < r.minHeadroomX2*r.real {
			t.Errorf("%s: default %d is less than %.1f times the real %d", r.name, r.def, float64(r.minHeadroomX2)/2, r.real)
		}
	}
}
