// ABI validation of a module: its metadata, exports and imports against
// ABI v1 and the host functions, its ABI version and declared capabilities.

package runtime

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
	"github.com/wasmprov/wasmprov/runtime/metadata"
)

// checkMetadata reads the module's metadata section statically and
// refuses, before anything compiles it, a module whose metadata is not
// valid or names another ABI or a newer host. A module that does not
// decode is left to precheck, which names the problem.
func checkMetadata(wasm []byte) error {
	md, err := metadata.Read(wasm)
	switch {
	case errors.Is(err, metadata.ErrInvalid):
		return fmt.Errorf("%w: %w", ErrInvalidModule, err)
	case err != nil || md == nil:
		return nil
	}
	if err := md.CheckHost(Version, abi.Version); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidModule, err)
	}
	return nil
}

type signature = engine.Signature

var (
	i32 = hostmodule.I32
	i64 = hostmodule.I64
)

// requiredExports are the function exports of ABI v1.
func requiredExports() map[string]signature {
	want := map[string]signature{
		abi.ExportABIVersion:   {Results: []engine.ValueType{i32}},
		abi.ExportCapabilities: {Results: []engine.ValueType{i64}},
	}
	for _, m := range abi.Methods {
		want[m.Export()] = signature{Results: []engine.ValueType{i32}}
	}
	return want
}

// validate checks a compiled module against the ABI and the host
// functions of host, and returns every problem found, so an author fixes
// them in one round.
func validate(m engine.Module, host hostTable) []string {
	var problems []string
	exports := m.ExportedFunctions()
	want := requiredExports()
	for _, name := range sortedKeys(want) {
		w := want[name]
		def, ok := exports[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("missing export %q %s", name, sigString(w)))
			continue
		}
		if !sigEqual(def, w) {
			problems = append(problems, fmt.Sprintf("export %q has signature %s, want %s", name, sigString(def), sigString(w)))
		}
	}
	for _, meth := range abi.OptionalMethods {
		w := signature{Results: []engine.ValueType{i32}}
		if def, ok := exports[meth.Export()]; ok && !sigEqual(def, w) {
			problems = append(problems, fmt.Sprintf("export %q has signature %s, want %s", meth.Export(), sigString(def), sigString(w)))
		}
	}
	if def, ok := exports[abi.ExportInitialize]; ok && (len(def.Params) != 0 || len(def.Results) != 0) {
		problems = append(problems, fmt.Sprintf("export %q must take and return nothing", abi.ExportInitialize))
	}
	if _, ok := exports[abi.ExportCommandStart]; ok {
		// A command's _start runs main and exits; the host never calls it,
		// so a command's runtime (a Go command's, C's constructors) would
		// never be initialised: refused here rather than trapping or
		// misbehaving at the first call.
		problems = append(problems, fmt.Sprintf("exports %q: it is a WASI command; a provider must be a reactor, initialised by %q and then called many times (Go: -buildmode=c-shared; C: -mexec-model=reactor; Rust: a cdylib) (SPEC §3)",
			abi.ExportCommandStart, abi.ExportInitialize))
	}
	if !slices.Contains(m.ExportedMemories(), abi.ExportMemory) {
		problems = append(problems, `missing memory export "memory"`)
	}
	for _, def := range m.ImportedFunctions() {
		mod, name, got := def.Module, def.Name, def.Signature
		switch {
		case mod == wasiModule:
			// Served by the engine's WASI; unknown names fail at instantiation.
		case mod == abi.ModuleName || host.modules[mod]:
			w, ok := host.sigs[[2]string{mod, name}]
			if !ok {
				problems = append(problems, fmt.Sprintf("imports unknown host function %s.%s", mod, name))
			} else if want := (signature{Params: w[0], Results: w[1]}); !sigEqual(got, want) {
				problems = append(problems, fmt.Sprintf("import %s.%s has signature %s, want %s", mod, name, sigString(got), sigString(want)))
			}
		case strings.HasPrefix(mod, "wasmprov_v"):
			problems = append(problems, fmt.Sprintf("imports %s.%s: this host implements ABI %s only", mod, name, abi.ModuleName))
		default:
			problems = append(problems, fmt.Sprintf("imports %s.%s from unknown module %q: no host function of this runtime has that module (an embedder adds its own with runtime.WithHostFunctions)", mod, name, mod))
		}
	}
	return problems
}

// checkABIVersion refuses a module whose ABI version export returned v,
// another version than this host's.
func checkABIVersion(v int32) error {
	if v != abi.Version {
		return fmt.Errorf("%w: module implements ABI version %d, this host implements version %d", ErrInvalidModule, v, abi.Version)
	}
	return nil
}

// checkDeclared refuses a module declaring capability bits the host's
// ABI does not define.
func checkDeclared(declared abi.Capability) error {
	if declared&^abi.AllCapabilities != 0 {
		return fmt.Errorf("%w: declares unknown capability bits %#x (built for a newer ABI?)", ErrInvalidModule, uint64(declared&^abi.AllCapabilities))
	}
	return nil
}

// wasiModule is the WASI import module every engine serves.
const wasiModule = "wasi_snapshot_preview1"

func sigEqual(s, o signature) bool {
	return slices.Equal(s.Params, o.Params) && slices.Equal(s.Results, o.Results)
}

// sigString renders s in WAT, as the spec writes signatures.
func sigString(s signature) string {
	var b strings.Builder
	b.WriteString("(func")
	for _, t := range s.Params {
		b.WriteString(" (param " + valueTypeName(t) + ")")
	}
	for _, t := range s.Results {
		b.WriteString(" (result " + valueTypeName(t) + ")")
	}
	b.WriteString(")")
	return b.String()
}

func valueTypeName(t engine.ValueType) string {
	switch t {
	case wasmbin.ValueTypeI32:
		return "i32"
	case wasmbin.ValueTypeI64:
		return "i64"
	case wasmbin.ValueTypeF32:
		return "f32"
	case wasmbin.ValueTypeF64:
		return "f64"
	case wasmbin.ValueTypeV128:
		return "v128"
	case wasmbin.ValueTypeFuncref:
		return "funcref"
	case wasmbin.ValueTypeExternref:
		return "externref"
	}
	return fmt.Sprintf("type(%#x)", t)
}
