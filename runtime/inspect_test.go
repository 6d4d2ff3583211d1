package runtime_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
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
