package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/precheck"
	"github.com/wasmprov/wasmprov/runtime/metadata"
)

// ModuleInfo describes a provider module without loading it as a provider:
// what `wasmprov inspect` prints and what an installer should look at
// before granting a policy.
type ModuleInfo struct {
	Size   int
	SHA256 string
	// ABIVersion is what the module's wasmprov_abi_version returns, when
	// ABIVersionKnown.
	ABIVersion int32
	// Declared is the module's capability declaration, when DeclaredKnown.
	Declared abi.Capability
	// ABIVersionKnown and DeclaredKnown say whether ABIVersion and
	// Declared could be read: by calling the exports or, for a module that
	// cannot be instantiated, from an export whose body is a constant.
	ABIVersionKnown, DeclaredKnown bool
	Exports                        []string
	Imports                        []string
	// Metadata is the module's wasmprov.metadata section, nil if it has
	// none or it is invalid (then a problem says why).
	Metadata *metadata.Metadata
	// Problems lists every reason the module would be refused; empty for a
	// valid module.
	Problems []string
}

// Inspect compiles wasm, lists its exports and imports, validates it against
// the ABI and reads its ABI version and capability declaration, reporting
// all it can read even of an invalid module: it instantiates a module with
// structural problems too, to call the exports that are sound, and reads a
// module no engine compiles because it uses a name the host reserves from
// its bytes. A module that does not decode, or is over the host's load
// limits, is an error wrapping ErrInvalidModule; any other reason to
// refuse the module is in Problems, all of them. ctx bounds the compile
// and the guest code Inspect runs, as does the default policy's
// LoadTimeout: inspecting is what one does to a module not yet trusted.
func (r *Runtime) Inspect(ctx context.Context, wasm []byte) (*ModuleInfo, error) {
	policy := r.cfg.defaultPolicy.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, time.Duration(policy.LoadTimeout))
	defer cancel()
	info := &ModuleInfo{Size: len(wasm), SHA256: digest(wasm)}
	mod, err := r.compile(ctx, wasm, policy)
	if err != nil {
		if errors.Is(err, precheck.ErrMalformed) || errors.Is(err, precheck.ErrRejected) || !errors.Is(err, ErrInvalidModule) {
			return nil, err
		}
		// The instrumenter refuses the names it adds: say so, rather
		// than that the module is no WebAssembly.
		st, serr := readStatic(wasm)
		if serr != nil || len(st.reservedProblems()) == 0 {
			return nil, err
		}
		info.describe(st)
		info.Problems = append(st.reservedProblems(), validate(hideReservedImports{st})...)
		info.readConstants(st)
		info.checkValues()
		info.readMetadata(wasm)
		return info, nil
	}
	defer mod.Close(context.WithoutCancel(ctx))
	info.describe(mod)
	// The names the host reserves, which an engine may compile (wasmtime
	// adds no import, a runtime without deadlines adds nothing).
	st, serr := readStatic(wasm)
	if serr == nil {
		info.Problems = append(st.reservedProblems(), validate(hideReservedImports{mod})...)
	} else {
		info.Problems = validate(mod)
	}
	inspectInstance(ctx, mod, info)
	if serr == nil {
		info.readConstants(st)
	}
	info.checkValues()
	info.readMetadata(wasm)
	return info, nil
}

// readMetadata reads the metadata section; what would make Load refuse
// it is a problem.
func (info *ModuleInfo) readMetadata(wasm []byte) {
	md, err := metadata.Read(wasm)
	if err != nil {
		info.Problems = append(info.Problems, err.Error())
		return
	}
	info.Metadata = md
	if md != nil {
		if err := md.CheckHost(Version, abi.Version); err != nil {
			info.Problems = append(info.Problems, err.Error())
		}
	}
}

// describe lists m's exports and imports.
func (info *ModuleInfo) describe(m engine.Module) {
	exports := m.ExportedFunctions()
	for _, name := range sortedKeys(exports) {
		info.Exports = append(info.Exports, fmt.Sprintf("%s %s", name, sigString(exports[name])))
	}
	for _, name := range m.ExportedMemories() {
		info.Exports = append(info.Exports, name+" (memory)")
	}
	for _, def := range m.ImportedFunctions() {
		info.Imports = append(info.Imports, fmt.Sprintf("%s.%s %s", def.Module, def.Name, sigString(def.Signature)))
	}
}

// inspectInstance instantiates mod and calls the ABI's scalar exports that
// have the ABI's signature.
func inspectInstance(ctx context.Context, mod engine.Module, info *ModuleInfo) {
	exports, want := mod.ExportedFunctions(), requiredExports()
	sound := func(name string) bool {
		def, ok := exports[name]
		return ok && sigEqual(def, want[name])
	}
	ei, err := mod.Instantiate(ctx, moduleConfig(0))
	if err != nil {
		info.Problems = append(info.Problems, fmt.Sprintf("instantiation failed: %v", err))
		return
	}
	inst := &guestInstance{inst: ei}
	defer inst.Close(context.WithoutCancel(ctx))
	if def, ok := exports[abi.ExportInitialize]; ok { // moduleConfig leaves it to the caller
		if len(def.Params) != 0 || len(def.Results) != 0 {
			return // validate reported it; what it would have set up is missing
		}
		init := ei.Function(abi.ExportInitialize)
		if err := inst.guard(ctx, func() error { return init.Call(ctx, nil) }); err != nil {
			info.Problems = append(info.Problems, fmt.Sprintf("instantiation failed: %s: %v", abi.ExportInitialize, err))
			return
		}
	}
	if sound(abi.ExportABIVersion) {
		v, ok := inst.callScalar(ctx, abi.ExportABIVersion, &info.Problems)
		info.ABIVersion, info.ABIVersionKnown = int32(uint32(v)), ok
	}
	if sound(abi.ExportCapabilities) {
		v, ok := inst.callScalar(ctx, abi.ExportCapabilities, &info.Problems)
		info.Declared, info.DeclaredKnown = abi.Capability(v), ok
	}
}

// readConstants fills in, from the module's bytes, the values no call
// could read.
func (info *ModuleInfo) readConstants(st *staticModule) {
	want := requiredExports()
	sound := func(name string) bool {
		def, ok := st.funcs[name]
		return ok && sigEqual(def, want[name])
	}
	if v, ok := st.consts[abi.ExportABIVersion]; ok && !info.ABIVersionKnown && sound(abi.ExportABIVersion) {
		info.ABIVersion, info.ABIVersionKnown = int32(uint32(v)), true
	}
	if v, ok := st.consts[abi.ExportCapabilities]; ok && !info.DeclaredKnown && sound(abi.ExportCapabilities) {
		info.Declared, info.DeclaredKnown = abi.Capability(v), true
	}
}

// checkValues adds the problems of the values read.
func (info *ModuleInfo) checkValues() {
	if info.ABIVersionKnown && info.ABIVersion != abi.Version {
		info.Problems = append(info.Problems, fmt.Sprintf("module implements ABI version %d, this host implements version %d", info.ABIVersion, abi.Version))
	}
	if unknown := info.Declared &^ abi.AllCapabilities; info.DeclaredKnown && unknown != 0 {
		info.Problems = append(info.Problems, fmt.Sprintf("declares unknown capability bits %#x", uint64(unknown)))
	}
}

func (inst *guestInstance) callScalar(ctx context.Context, name string, problems *[]string) (uint64, bool) {
	var stack [1]uint64
	if err := inst.guard(ctx, func() error { return inst.inst.Function(name).Call(ctx, stack[:]) }); err != nil {
		*problems = append(*problems, fmt.Sprintf("%s: %v", name, err))
		return 0, false
	}
	return stack[0], true
}
