package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/precheck"
	"github.com/wasmprov/wasmprov/runtime/metadata"
)

// InspectMode is how Inspect reads a module.
type InspectMode int

const (
	// InspectRun, the default (the zero value, what Inspect does without
	// options): compile the module on the runtime's engine (through the
	// compilation cache), instantiate it with no capability granted, run
	// _initialize and call wasmprov_abi_version and wasmprov_capabilities,
	// under the default policy's LoadTimeout. It is the only mode that
	// validates function bodies and sees instantiation problems. The values
	// it reads are remembered in the compilation cache directory, when
	// the runtime has one, for InspectStatic.
	InspectRun InspectMode = iota
	// InspectStatic reads the module's bytes only: nothing is compiled,
	// no guest code runs. The host's load limits are checked first (a
	// module over them is an error, as for InspectRun), then the imports,
	// exports and metadata are read; the ABI version and capabilities come
	// from an export whose body is a constant, else from the result of an
	// earlier InspectRun of the same bytes (keyed by sha256), else they are
	// unknown. Function bodies are not validated (CodeValidated is false).
	// It takes milliseconds where InspectRun of a large Go guest compiles
	// for seconds.
	InspectStatic
)

func (m InspectMode) String() string {
	if m == InspectStatic {
		return "static"
	}
	return "run"
}

// InspectOption configures Inspect.
type InspectOption func(*inspectConfig)

type inspectConfig struct{ mode InspectMode }

// WithInspectMode selects how Inspect reads the module (default
// InspectRun).
func WithInspectMode(m InspectMode) InspectOption {
	return func(c *inspectConfig) { c.mode = m }
}

// ValueSource is where Inspect read the ABI version or the capability
// declaration: a value is only as trustworthy as its source, and a static
// inspect must not pass off a remembered value as one it read.
type ValueSource int

const (
	// FromNone: the value is not known.
	FromNone ValueSource = iota
	// FromConstant: the export's body is a single constant, read from the
	// bytes.
	FromConstant
	// FromExportCall: the export was called, in an instance of this
	// module (InspectRun).
	FromExportCall
	// FromCache: an earlier InspectRun of the same bytes (same sha256)
	// called the export; its result was kept in the cache directory.
	FromCache
)

func (s ValueSource) String() string {
	switch s {
	case FromConstant:
		return "constant body of the export"
	case FromExportCall:
		return "call of the export"
	case FromCache:
		return "cached result of an earlier run of this module's export (same sha256)"
	}
	return "unknown"
}

// ModuleInfo describes a provider module without loading it as a provider:
// what `wasmprov inspect` prints and what an installer should look at
// before granting a policy.
type ModuleInfo struct {
	Size   int
	SHA256 string
	// Mode is how the module was inspected.
	Mode InspectMode
	// CodeValidated says whether the function bodies were validated (the
	// module compiled). A static inspect does not validate them: a module
	// without problems may still fail to compile.
	CodeValidated bool
	// ABIVersion is what the module's wasmprov_abi_version returns, when
	// ABIVersionKnown.
	ABIVersion int32
	// Declared is the module's capability declaration, when DeclaredKnown.
	Declared abi.Capability
	// ABIVersionKnown and DeclaredKnown say whether ABIVersion and
	// Declared could be read: by calling the exports, from an export whose
	// body is a constant, or from the cached result of an earlier call;
	// ABIVersionFrom and DeclaredFrom say which. What the metadata section
	// declares is never taken for them: it is in Metadata.
	ABIVersionKnown, DeclaredKnown bool
	ABIVersionFrom, DeclaredFrom   ValueSource
	Exports                        []string
	Imports                        []string
	// CustomCapabilities are the capabilities of the runtime's custom host
	// functions (WithHostFunctions) the module imports, sorted: what its
	// policy must grant for it to load.
	CustomCapabilities []string
	// Metadata is the module's wasmprov.metadata section, nil if it has
	// none or it is invalid (then a problem says why).
	Metadata *metadata.Metadata
	// Problems lists every reason the module would be refused that the
	// mode could see; empty for a valid module. A static inspect cannot
	// see code that does not compile nor an instance that fails.
	Problems []string
}

// Inspect lists wasm's exports and imports, validates it against the ABI
// and reads its ABI version and capability declaration, reporting all it
// can read even of an invalid module. By default (InspectRun) it compiles
// the module and calls its exports; WithInspectMode(InspectStatic) reads
// the bytes only. A module that does not decode, or is over the host's
// load limits, is an error wrapping ErrInvalidModule; any other reason to
// refuse the module is in Problems, all of them. ctx bounds the compile
// and the guest code Inspect runs, as does the default policy's
// LoadTimeout: inspecting is what one does to a module not yet trusted.
func (r *Runtime) Inspect(ctx context.Context, wasm []byte, opts ...InspectOption) (*ModuleInfo, error) {
	var cfg inspectConfig
	for _, o := range opts {
		o(&cfg)
	}
	policy := r.cfg.defaultPolicy.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, time.Duration(policy.LoadTimeout))
	defer cancel()
	if cfg.mode == InspectStatic {
		return r.inspectStatic(ctx, wasm, policy)
	}
	return r.inspectRun(ctx, wasm, policy)
}

// inspectRun is InspectRun: it instantiates a module with structural
// problems too, to call the exports that are sound, and reads a module no
// engine compiles because it uses a name the host reserves from its bytes.
func (r *Runtime) inspectRun(ctx context.Context, wasm []byte, policy Policy) (*ModuleInfo, error) {
	info := &ModuleInfo{Size: len(wasm), SHA256: digest(wasm), Mode: InspectRun}
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
		info.describe(st, r.host)
		info.Problems = append(st.reservedProblems(), validate(hideReservedImports{st}, r.host)...)
		info.readConstants(st)
		info.checkValues()
		info.readMetadata(wasm)
		return info, nil
	}
	defer mod.Close(context.WithoutCancel(ctx))
	info.CodeValidated = true
	info.describe(mod, r.host)
	// The names the host reserves, which an engine may compile (wasmtime
	// adds no import, a runtime without deadlines adds nothing).
	st, serr := readStatic(wasm)
	if serr == nil {
		info.Problems = append(st.reservedProblems(), validate(hideReservedImports{mod}, r.host)...)
	} else {
		info.Problems = validate(mod, r.host)
	}
	inspectInstance(ctx, mod, info)
	// The compile passed precheck's limits.
	r.remember(info, loadLimits(policy).Key(), r.cachedEntry(info.SHA256))
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

// describe lists m's exports and imports, and the capabilities of the
// custom host functions of host it imports.
func (info *ModuleInfo) describe(m engine.Module, host hostTable) {
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
	for _, f := range host.customImports(m) {
		if !slices.Contains(info.CustomCapabilities, f.Capability) {
			info.CustomCapabilities = append(info.CustomCapabilities, f.Capability)
		}
	}
	slices.Sort(info.CustomCapabilities)
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
		if ok {
			info.ABIVersionFrom = FromExportCall
		}
	}
	if sound(abi.ExportCapabilities) {
		v, ok := inst.callScalar(ctx, abi.ExportCapabilities, &info.Problems)
		info.Declared, info.DeclaredKnown = abi.Capability(v), ok
		if ok {
			info.DeclaredFrom = FromExportCall
		}
	}
}

// readConstants fills in, from the module's bytes, the values no call
// could read.
func (info *ModuleInfo) readConstants(st *staticModule) {
	if v, ok := st.consts[abi.ExportABIVersion]; ok && !info.ABIVersionKnown && st.sound(abi.ExportABIVersion) {
		info.ABIVersion, info.ABIVersionKnown, info.ABIVersionFrom = int32(uint32(v)), true, FromConstant
	}
	if v, ok := st.consts[abi.ExportCapabilities]; ok && !info.DeclaredKnown && st.sound(abi.ExportCapabilities) {
		info.Declared, info.DeclaredKnown, info.DeclaredFrom = abi.Capability(v), true, FromConstant
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
