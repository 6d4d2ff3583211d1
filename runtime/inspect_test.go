package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/runtime"
)

// assemble turns WAT into a module with wat2wasm, which the test needs: a
// missing wat2wasm fails it rather than skip what it checks.
func assemble(t *testing.T, wat string) []byte {
	t.Helper()
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Fatalf("wat2wasm (wabt) is needed to assemble the test modules: %v", err)
	}
	dir := t.TempDir()
	src, out := filepath.Join(dir, "m.wat"), filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(src, []byte(wat), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(tool, src, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// inspectModule is an ABI v1 module from parts: abiVersion and caps are
// the bodies of the scalar exports, drop names method exports to leave out,
// extra is spliced into the module.
func inspectModule(abiVersion, caps string, drop []string, extra string) string {
	var b strings.Builder
	b.WriteString("(module\n" + extra + "\n")
	b.WriteString(`  (memory (export "memory") 1)` + "\n")
	b.WriteString(`  (func (export "wasmprov_abi_version") (result i32) ` + abiVersion + ")\n")
	b.WriteString(`  (func (export "wasmprov_capabilities") (result i64) ` + caps + ")\n")
outer:
	for _, m := range abi.Methods {
		for _, d := range drop {
			if m.Export() == d {
				continue outer
			}
		}
		b.WriteString(`  (func (export "` + m.Export() + `") (result i32) (i32.const 0))` + "\n")
	}
	b.WriteString(")\n")
	return b.String()
}

// Inspect reports all it can read of an invalid module, and every problem
// at once: issue 14 found "abi version: 0" and "capabilities: (none)" for
// any module with a structural problem, an unknown capability bit left out
// when there were structural problems too, and a module exporting
// wasmprov_interrupt called "not a valid WebAssembly module".
func TestInspectInvalidModules(t *testing.T) {
	const unknownBit = "(i64.const 0x10000000001)" // log, and bit 40
	for _, tc := range []struct {
		name         string
		wat          string
		version      int32 // -1: not readable
		declared     abi.Capability
		declaredRead bool
		problems     []string // each must be among the problems
		export       string   // must be listed
	}{{
		name:    "valid",
		wat:     inspectModule("(i32.const 1)", "(i64.const 1)", nil, ""),
		version: 1, declared: abi.CapLog, declaredRead: true,
	}, {
		name:    "missing export and unknown capability bit",
		wat:     inspectModule("(i32.const 1)", unknownBit, []string{"wasmprov_delete"}, ""),
		version: 1, declared: abi.CapLog | 1<<40, declaredRead: true,
		problems: []string{`missing export "wasmprov_delete"`, "declares unknown capability bits 0x10000000000"},
		export:   "wasmprov_validate (func (result i32))",
	}, {
		name:    "wrong ABI version and a wrong signature",
		wat:     strings.Replace(inspectModule("(i32.const 2)", "(i64.const 0)", []string{"wasmprov_get"}, ""), ")\n)", ")\n"+`  (func (export "wasmprov_get") (param i32) (result i32) (i32.const 0)))`, 1),
		version: 2, declaredRead: true,
		problems: []string{`export "wasmprov_get" has signature (func (param i32) (result i32))`, "module implements ABI version 2"},
	}, {
		name: "unknown import: not instantiable, the constants read from the bytes",
		wat: inspectModule("(i32.const 1)", unknownBit, nil,
			`  (import "wasmprov_v1" "nosuch" (func (param i32)))`),
		version: 1, declared: abi.CapLog | 1<<40, declaredRead: true,
		problems: []string{"imports unknown host function wasmprov_v1.nosuch", "declares unknown capability bits 0x10000000000"},
		export:   "wasmprov_abi_version (func (result i32))",
	}, {
		name: "unknown import and a computed version: unreadable",
		wat: inspectModule("(i32.add (i32.const 0) (i32.const 1))", "(i64.const 0)", nil,
			`  (import "elsewhere" "f" (func))`),
		version: -1, declaredRead: true,
		problems: []string{`imports elsewhere.f from unknown module "elsewhere"`},
	}, {
		name:    "exports wasmprov_interrupt",
		wat:     inspectModule("(i32.const 1)", unknownBit, []string{"wasmprov_delete"}, `  (export "wasmprov_interrupt" (memory 0))`),
		version: 1, declared: abi.CapLog | 1<<40, declaredRead: true,
		problems: []string{`exports "wasmprov_interrupt": the name is reserved for the host`, `missing export "wasmprov_delete"`,
			"declares unknown capability bits 0x10000000000"},
		export: "wasmprov_interrupt (memory)",
	}, {
		name:    "exports wasmprov_stack",
		wat:     inspectModule("(i32.const 1)", "(i64.const 0)", nil, `  (global (export "wasmprov_stack") i32 (i32.const 0))`),
		version: 1, declaredRead: true,
		problems: []string{`exports "wasmprov_stack": the name is reserved for the host`},
	}, {
		name: "imports from wasmprov_interrupt",
		wat: inspectModule("(i32.const 1)", "(i64.const 0)", nil,
			`  (import "wasmprov_interrupt" "yield" (func))`),
		version: 1, declaredRead: true,
		problems: []string{`imports wasmprov_interrupt.yield: the module name "wasmprov_interrupt" is reserved for the host`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRuntime(t)
			info, err := rt.Inspect(context.Background(), assemble(t, tc.wat))
			if err != nil {
				t.Fatalf("Inspect: %v", err)
			}
			all := strings.Join(info.Problems, "\n")
			if tc.version < 0 {
				if info.ABIVersionKnown {
					t.Errorf("ABI version %d read, want it unknown", info.ABIVersion)
				}
			} else if !info.ABIVersionKnown || info.ABIVersion != tc.version {
				t.Errorf("ABI version %d (known %v), want %d", info.ABIVersion, info.ABIVersionKnown, tc.version)
			}
			if info.DeclaredKnown != tc.declaredRead || info.Declared != tc.declared {
				t.Errorf("declared %#x (known %v), want %#x (known %v)", uint64(info.Declared), info.DeclaredKnown, uint64(tc.declared), tc.declaredRead)
			}
			if len(tc.problems) == 0 && len(info.Problems) != 0 {
				t.Errorf("problems of a valid module:\n%s", all)
			}
			for _, want := range tc.problems {
				if !strings.Contains(all, want) {
					t.Errorf("problems lack %q:\n%s", want, all)
				}
			}
			var stated []string // the problems, but the consequence that instantiation fails
			for _, p := range info.Problems {
				if !strings.HasPrefix(p, "instantiation failed") {
					stated = append(stated, p)
				}
			}
			if strings.Count(strings.Join(stated, "\n"), "wasmprov_interrupt") > strings.Count(strings.Join(tc.problems, "\n"), "wasmprov_interrupt") {
				t.Errorf("the reserved name is reported more than once:\n%s", all)
			}
			if strings.Contains(all, "not a valid WebAssembly module") {
				t.Errorf("a well-formed module called not WebAssembly:\n%s", all)
			}
			if tc.export != "" && !strings.Contains(strings.Join(info.Exports, "\n"), tc.export) {
				t.Errorf("exports lack %q: %q", tc.export, info.Exports)
			}
			if len(info.Imports) == 0 && strings.Contains(tc.wat, "(import") {
				t.Errorf("no imports listed")
			}
		})
	}
}

// A module that does not decode is still an error: there is nothing to
// describe.
func TestInspectMalformed(t *testing.T) {
	rt := newRuntime(t)
	if _, err := rt.Inspect(context.Background(), []byte("\x00asm\x01\x00\x00\x00\x01\xff")); err == nil || !strings.Contains(err.Error(), runtime.ErrInvalidModule.Error()) {
		t.Errorf("a truncated module: %v", err)
	}
}

// A runtime that does not instrument compiles a module using the reserved
// names; Inspect reports them all the same: another host would refuse it.
func TestInspectReservedNamesWithoutDeadlines(t *testing.T) {
	rt := newRuntime(t, runtime.WithInterruptibleGuests(false))
	wasm := assemble(t, inspectModule("(i32.const 1)", "(i64.const 0)", nil, `  (export "wasmprov_interrupt" (memory 0))`))
	info, err := rt.Inspect(context.Background(), wasm)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Problems) != 1 || !strings.Contains(info.Problems[0], `exports "wasmprov_interrupt": the name is reserved for the host`) {
		t.Errorf("want the reserved export as the one problem, got %q", info.Problems)
	}
	if !info.ABIVersionKnown || info.ABIVersion != 1 || !info.DeclaredKnown {
		t.Errorf("the sound exports were not read: %+v", info)
	}
}

// static is the option of a static inspect.
var static = runtime.WithInspectMode(runtime.InspectStatic)

// A static inspect of a Go guest lists what a run lists, runs nothing and
// says so; a run after it reads the values, and a static inspect after the
// run shows them, labelled as cached.
func TestInspectStaticGoGuest(t *testing.T) {
	wasm, err := os.ReadFile(testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// No cache directory: nothing remembered from an earlier run.
	cold, err := newRuntime(t, runtime.WithCompilationCacheDir("")).Inspect(ctx, wasm, static)
	if err != nil {
		t.Fatal(err)
	}
	if cold.Mode != runtime.InspectStatic || cold.CodeValidated {
		t.Errorf("static inspect: mode %v, code validated %v", cold.Mode, cold.CodeValidated)
	}
	// Go's wasmexport wrappers are no constant bodies: unknown, not 0.
	if cold.ABIVersionKnown || cold.DeclaredKnown || cold.ABIVersionFrom != runtime.FromNone || cold.DeclaredFrom != runtime.FromNone {
		t.Errorf("a Go guest's values read without running it: %+v", cold)
	}
	if len(cold.Problems) != 0 {
		t.Errorf("problems of a valid guest: %q", cold.Problems)
	}

	rt := newRuntime(t) // the shared compilation cache: the compile is warm
	ran, err := rt.Inspect(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	if ran.Mode != runtime.InspectRun || !ran.CodeValidated || len(ran.Problems) != 0 {
		t.Fatalf("run: mode %v, code validated %v, problems %q", ran.Mode, ran.CodeValidated, ran.Problems)
	}
	if !ran.ABIVersionKnown || ran.ABIVersion != abi.Version || ran.ABIVersionFrom != runtime.FromExportCall ||
		!ran.DeclaredKnown || ran.DeclaredFrom != runtime.FromExportCall {
		t.Fatalf("run did not read the exports: %+v", ran)
	}
	if !slices.Equal(cold.Exports, ran.Exports) || !slices.Equal(cold.Imports, ran.Imports) {
		t.Errorf("static and run differ:\nexports %q\n        %q\nimports %q\n        %q", cold.Exports, ran.Exports, cold.Imports, ran.Imports)
	}
	if cold.SHA256 != ran.SHA256 || cold.Size != ran.Size {
		t.Errorf("digest or size differ: %s %d, %s %d", cold.SHA256, cold.Size, ran.SHA256, ran.Size)
	}

	warm, err := rt.Inspect(ctx, wasm, static)
	if err != nil {
		t.Fatal(err)
	}
	if warm.ABIVersion != ran.ABIVersion || warm.Declared != ran.Declared || !warm.ABIVersionKnown || !warm.DeclaredKnown ||
		warm.ABIVersionFrom != runtime.FromCache || warm.DeclaredFrom != runtime.FromCache || warm.CodeValidated {
		t.Errorf("static after a run: %+v; the run read %d, %#x", warm, ran.ABIVersion, uint64(ran.Declared))
	}
}

// computedModule is a valid provider whose scalar exports compute their
// values (no constant body), so only a call, or its cached result, tells
// them.
func computedModule(t *testing.T, caps int) []byte {
	return assemble(t, inspectModule("(i32.add (i32.const 0) (i32.const 1))", fmt.Sprintf("(i64.add (i64.const 0) (i64.const %d))", caps), nil, ""))
}

// The result cache: a static inspect after a run returns what the run
// read; another module (another sha256, in the same place) does not get
// it; a damaged entry, or one naming other bytes, is a miss and no error.
func TestInspectResultCache(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rt := newRuntime(t, runtime.WithCompilationCacheDir(dir))
	a, b := computedModule(t, 3), computedModule(t, 5)

	before, err := rt.Inspect(ctx, a, static)
	if err != nil {
		t.Fatal(err)
	}
	if before.ABIVersionKnown || before.DeclaredKnown {
		t.Fatalf("computed values known before any run: %+v", before)
	}
	ran, err := rt.Inspect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if ran.ABIVersion != 1 || ran.Declared != 3 || ran.DeclaredFrom != runtime.FromExportCall {
		t.Fatalf("run: %+v", ran)
	}
	check := func(name string, wasm []byte, want bool, version int32, declared abi.Capability) {
		t.Helper()
		// A new runtime, as a new process would have.
		info, err := newRuntime(t, runtime.WithCompilationCacheDir(dir)).Inspect(ctx, wasm, static)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := info.ABIVersionKnown && info.DeclaredKnown && info.ABIVersionFrom == runtime.FromCache && info.DeclaredFrom == runtime.FromCache
		if got != want || (want && (info.ABIVersion != version || info.Declared != declared)) {
			t.Errorf("%s: cached %v (want %v): version %d from %v, declared %#x from %v", name, got, want,
				info.ABIVersion, info.ABIVersionFrom, uint64(info.Declared), info.DeclaredFrom)
		}
		if !want && (info.ABIVersionKnown || info.DeclaredKnown) {
			t.Errorf("%s: values known without a cache hit: %+v", name, info)
		}
	}
	check("the module that ran", a, true, 1, 3)
	check("another module", b, false, 0, 0)

	entryA := entryOf(t, dir, ran.SHA256)
	good, err := os.ReadFile(entryA)
	if err != nil {
		t.Fatal(err)
	}
	// A's entry put where B's would be: it names A's bytes, not B's.
	infoB, err := rt.Inspect(ctx, b, static)
	if err != nil {
		t.Fatal(err)
	}
	entryB := filepath.Join(filepath.Dir(entryA), infoB.SHA256+".json")
	if err := os.WriteFile(entryB, good, 0o644); err != nil {
		t.Fatal(err)
	}
	check("another module given the first one's entry", b, false, 0, 0)

	for name, damaged := range map[string][]byte{
		"truncated":   good[:len(good)/2],
		"not JSON":    []byte("\x00\xff garbage"),
		"empty":       nil,
		"oversized":   append(append([]byte{}, good[:len(good)-1]...), append(bytes.Repeat([]byte(" "), 5000), '}')...),
		"other host":  bytes.Replace(good, []byte(`"host":"`+runtime.Version+`"`), []byte(`"host":"0.0.0-other"`), 1),
		"other sha":   bytes.Replace(good, []byte(ran.SHA256), []byte(infoB.SHA256), 1),
		"wrong types": []byte(`{"sha256":1,"abiVersion":"one"}`),
	} {
		if err := os.WriteFile(entryA, damaged, 0o644); err != nil {
			t.Fatal(err)
		}
		check("entry "+name, a, false, 0, 0)
	}
	// The damaged entry is replaced by the next run's.
	if _, err := rt.Inspect(ctx, a); err != nil {
		t.Fatal(err)
	}
	check("after a new run", a, true, 1, 3)
}

// A run that learns nothing new leaves the cache entry as it is: a warm
// load or inspect does not rewrite it.
func TestInspectResultCacheNotRewritten(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rt := newRuntime(t, runtime.WithCompilationCacheDir(dir))
	wasm := computedModule(t, 3)
	info, err := rt.Inspect(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	entry := entryOf(t, dir, info.SHA256)
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(entry, old, old); err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]runtime.InspectOption{nil, {static}} {
		if _, err := rt.Inspect(ctx, wasm, opts...); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(entry); err != nil || !fi.ModTime().Equal(old) {
		t.Fatalf("entry rewritten by runs that learnt nothing new: %v, %v", fi.ModTime(), err)
	}
}

// entryOf is the result cache entry of the module sum in the cache dir.
func entryOf(t *testing.T, dir, sum string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*", sum+".json"))
	if err != nil || len(m) != 1 {
		t.Fatalf("the cache entry of %s: %q, %v", sum, m, err)
	}
	return m[0]
}

// A static inspect runs none of the module's code: an _initialize that
// loops forever and exports that would trap change nothing, and it returns
// at once; a run reports them. Neither does it validate code: a body that
// does not type-check passes a static inspect, which says so
// (CodeValidated), and fails a run.
func TestInspectStaticRunsNoCode(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, runtime.WithCompilationCacheDir(t.TempDir()),
		runtime.WithDefaultPolicy(runtime.Policy{LoadTimeout: runtime.Duration(500 * time.Millisecond)}))
	loops := assemble(t, inspectModule("(unreachable)", "(unreachable)", nil,
		`  (func (export "_initialize") (loop (br 0)))`))
	start := time.Now()
	info, err := rt.Inspect(ctx, loops, static)
	if took := time.Since(start); took > 250*time.Millisecond {
		t.Errorf("static inspect took %v: did it run the module?", took)
	}
	if err != nil || len(info.Problems) != 0 || info.ABIVersionKnown || info.DeclaredKnown || info.CodeValidated {
		t.Errorf("static inspect of a module whose code loops and traps: %+v, %v", info, err)
	}
	ran, err := rt.Inspect(ctx, loops)
	if err != nil {
		t.Fatal(err)
	}
	if all := strings.Join(ran.Problems, "\n"); !strings.Contains(all, abi.ExportInitialize) {
		t.Errorf("run: the looping _initialize is not among the problems: %q", ran.Problems)
	}
	traps := assemble(t, inspectModule("(unreachable)", "(unreachable)", nil, ""))
	ran, err = rt.Inspect(ctx, traps)
	if err != nil {
		t.Fatal(err)
	}
	if all := strings.Join(ran.Problems, "\n"); !strings.Contains(all, abi.ExportABIVersion) || !strings.Contains(all, abi.ExportCapabilities) || ran.ABIVersionKnown {
		t.Errorf("run: the trapping exports are not among the problems: %+v", ran)
	}

	// (func (export "f") (result i32) (i64.const 0)): decodes, does not
	// validate (wat2wasm would refuse to assemble it).
	invalid := []byte("\x00asm\x01\x00\x00\x00" +
		"\x01\x05\x01\x60\x00\x01\x7f" + // type: (func (result i32))
		"\x03\x02\x01\x00" + // function 0 of type 0
		"\x07\x05\x01\x01f\x00\x00" + // export "f"
		"\x0a\x06\x01\x04\x00\x42\x00\x0b") // code: i64.const 0, end
	if info, err := rt.Inspect(ctx, invalid, static); err != nil || info.CodeValidated {
		t.Errorf("static inspect of a body that does not validate: %+v, %v", info, err)
	}
	if _, err := rt.Inspect(ctx, invalid); !errors.Is(err, runtime.ErrInvalidModule) {
		t.Errorf("run of a body that does not validate: want ErrInvalidModule, got %v", err)
	}
}

// A static inspect checks the host's limits as a load does: a module over
// them is an error, not a description; so is one that does not decode.
func TestInspectStaticLimits(t *testing.T) {
	rt := newRuntime(t, runtime.WithCompilationCacheDir(t.TempDir()))
	for name, wasm := range map[string][]byte{
		"start section": startLoops(),
		"truncated":     []byte("\x00asm\x01\x00\x00\x00\x01\xff"),
		"not wasm":      []byte("hello"),
	} {
		if _, err := rt.Inspect(context.Background(), wasm, static); !errors.Is(err, runtime.ErrInvalidModule) {
			t.Errorf("%s: want ErrInvalidModule, got %v", name, err)
		}
	}
}

// A load reads what `inspect -run` would (its probe instance calls the two
// exports): a later static inspect of the same bytes shows those values,
// from the cache, without compiling or running anything.
func TestInspectAfterLoad(t *testing.T) {
	wasm, err := os.ReadFile(testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := newRuntime(t, runtime.WithCompilationCacheDir(t.TempDir()))
	before, err := rt.Inspect(ctx, wasm, static)
	if err != nil {
		t.Fatal(err)
	}
	if before.ABIVersionKnown || before.DeclaredKnown {
		t.Fatalf("values known before anything ran: %+v", before)
	}
	p, err := rt.LoadBytes(ctx, "fake", wasm)
	if err != nil {
		t.Fatal(err)
	}
	after, err := rt.Inspect(ctx, wasm, static)
	if err != nil {
		t.Fatal(err)
	}
	if !after.ABIVersionKnown || after.ABIVersion != abi.Version || after.ABIVersionFrom != runtime.FromCache ||
		!after.DeclaredKnown || after.Declared != p.Declared() || after.DeclaredFrom != runtime.FromCache {
		t.Errorf("static inspect after a load: %+v; the load read ABI %d, declared %#x", after, abi.Version, uint64(p.Declared()))
	}
}
