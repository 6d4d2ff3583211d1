package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/interrupt"
	"github.com/wasmprov/wasmprov/runtime/internal/precheck"
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// staticModule is what Inspect reads from a module's bytes without
// compiling it: its function signatures, imports and exports, and the
// constants its simplest exports return. It implements engine.Module so
// that validate checks it as it checks a compiled module, for a module no
// engine will compile (one using the names the host reserves).
type staticModule struct {
	funcs    map[string]signature // function exports
	memories []string             // memory exports
	imports  []engine.Import      // function imports
	others   []string             // exports of other kinds (globals, tables, tags)
	// consts are the values of the exported functions whose body is a
	// single constant (i32.const or i64.const), by export name.
	consts map[string]uint64
}

var errNotCompiled = errors.New("module not compiled: inspected from its bytes")

func (m *staticModule) ExportedFunctions() map[string]signature { return m.funcs }
func (m *staticModule) ExportedMemories() []string              { return m.memories }
func (m *staticModule) ImportedFunctions() []engine.Import      { return m.imports }
func (m *staticModule) Instantiate(context.Context, engine.InstanceConfig) (engine.Instance, error) {
	return nil, errNotCompiled
}
func (m *staticModule) Close(context.Context) error { return nil }

// sound reports whether the module exports the function name with the
// signature the ABI gives it.
func (m *staticModule) sound(name string) bool {
	def, ok := m.funcs[name]
	want, known := requiredExports()[name]
	return ok && known && sigEqual(def, want)
}

// reservedProblems lists the names the module uses that the host's deadline
// instrumentation reserves (SPEC §9): it adds an import from
// interrupt.YieldModule (wazero) or a memory export interrupt.MemoryName
// (wasmtime), and a global export interrupt.StackName.
func (m *staticModule) reservedProblems() []string {
	var problems []string
	reserved := func(name string) bool { return name == interrupt.MemoryName || name == interrupt.StackName }
	for _, names := range [][]string{sortedKeys(m.funcs), m.memories, m.others} {
		for _, name := range names {
			if reserved(name) {
				problems = append(problems, fmt.Sprintf("exports %q: the name is reserved for the host, which adds it to stop a guest at its deadline (SPEC §9)", name))
			}
		}
	}
	for _, im := range m.imports {
		if im.Module == interrupt.YieldModule {
			problems = append(problems, fmt.Sprintf("imports %s.%s: the module name %q is reserved for the host, which adds its import to stop a guest at its deadline (SPEC §9)", im.Module, im.Name, im.Module))
		}
	}
	return problems
}

// hideReservedImports hides from validate the imports reservedProblems
// reports, which validate would report a second time, as imports from an
// unknown module.
type hideReservedImports struct{ engine.Module }

func (m hideReservedImports) ImportedFunctions() []engine.Import {
	var out []engine.Import
	for _, im := range m.Module.ImportedFunctions() {
		if im.Module != interrupt.YieldModule {
			out = append(out, im)
		}
	}
	return out
}

// readStatic reads wasm's types, imports, functions, exports and the bodies
// of the ABI's scalar exports. It decodes; it does not validate: an error
// means the bytes do not decode, nothing else.
func readStatic(wasm []byte) (*staticModule, error) {
	sr := &staticReader{
		m:       &staticModule{funcs: map[string]signature{}, consts: map[string]uint64{}},
		exports: map[uint32][]string{},
	}
	it, err := wasmbin.NewSections(wasm)
	if err != nil {
		return nil, err
	}
	var s wasmbin.Section
	for {
		ok, err := it.Next(&s)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		r := s.Reader()
		switch s.ID {
		case wasmbin.SectionIDType:
			err = sr.types(&r)
		case wasmbin.SectionIDImport:
			err = sr.imports(&r)
		case wasmbin.SectionIDFunction:
			err = sr.functions(&r)
		case wasmbin.SectionIDExport:
			err = sr.exportSection(&r)
		case wasmbin.SectionIDCode:
			err = sr.code(&r)
		}
		if err != nil {
			return nil, err
		}
	}
	return sr.m, nil
}

// staticReader is readStatic's state between the sections it reads.
type staticReader struct {
	m        *staticModule
	sigs     []signature
	funcType []uint32 // type index of each function, imports first
	imported int
	exports  map[uint32][]string // defined function index -> the scalar exports naming it
}

func (sr *staticReader) sigOf(typeIdx uint32) (signature, error) {
	if int(typeIdx) >= len(sr.sigs) {
		return signature{}, fmt.Errorf("type index %d out of range", typeIdx)
	}
	return sr.sigs[typeIdx], nil
}

// types reads the type section.
func (sr *staticReader) types(r *wasmbin.Reader) error {
	n, err := r.VecCount(3)
	if err != nil {
		return err
	}
	for ; n > 0; n-- {
		sig, err := readFuncType(r)
		if err != nil {
			return err
		}
		sr.sigs = append(sr.sigs, sig)
	}
	return nil
}

// imports reads the import section's functions.
func (sr *staticReader) imports(r *wasmbin.Reader) error {
	n, err := r.VecCount(4)
	if err != nil {
		return err
	}
	for ; n > 0; n-- {
		im, err := r.ReadImport()
		if err != nil {
			return err
		}
		if im.Kind != wasmbin.ExternFunc {
			continue
		}
		sig, err := sr.sigOf(im.Index)
		if err != nil {
			return err
		}
		sr.m.imports = append(sr.m.imports, engine.Import{Module: string(im.Module), Name: string(im.Name), Signature: sig})
		sr.funcType = append(sr.funcType, im.Index)
		sr.imported++
	}
	return nil
}

// functions reads the function section: the defined functions' types.
func (sr *staticReader) functions(r *wasmbin.Reader) error {
	n, err := r.VecCount(1)
	if err != nil {
		return err
	}
	for ; n > 0; n-- {
		t, err := r.U32()
		if err != nil {
			return err
		}
		sr.funcType = append(sr.funcType, t)
	}
	return nil
}

// exportSection reads the export section, noting the defined functions
// the ABI's scalar exports name.
func (sr *staticReader) exportSection(r *wasmbin.Reader) error {
	m := sr.m
	n, err := r.VecCount(2)
	if err != nil {
		return err
	}
	for ; n > 0; n-- {
		ex, err := r.ReadExport()
		if err != nil {
			return err
		}
		name := string(ex.Name)
		switch ex.Kind {
		case wasmbin.ExternFunc:
			if int(ex.Index) >= len(sr.funcType) {
				return fmt.Errorf("export %q: function index %d out of range", name, ex.Index)
			}
			if m.funcs[name], err = sr.sigOf(sr.funcType[ex.Index]); err != nil {
				return err
			}
			if (name == abi.ExportABIVersion || name == abi.ExportCapabilities) && int(ex.Index) >= sr.imported {
				sr.exports[ex.Index-uint32(sr.imported)] = append(sr.exports[ex.Index-uint32(sr.imported)], name)
			}
		case wasmbin.ExternMemory:
			m.memories = append(m.memories, name)
		default:
			m.others = append(m.others, name)
		}
	}
	return nil
}

// code reads the code section: the value of each scalar export whose
// body is one constant.
func (sr *staticReader) code(r *wasmbin.Reader) error {
	n, err := r.VecCount(2)
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		c, err := r.ReadCode()
		if err != nil {
			return err
		}
		for _, name := range sr.exports[i] {
			if v, ok := constantBody(&c); ok {
				sr.m.consts[name] = v
			}
		}
	}
	return nil
}

func readFuncType(r *wasmbin.Reader) (signature, error) {
	form, err := r.Byte()
	if err != nil {
		return signature{}, err
	}
	if form != wasmbin.TypeFormFunc {
		return signature{}, fmt.Errorf("unsupported type form 0x%02x", form)
	}
	var sig signature
	for _, list := range []*[]engine.ValueType{&sig.Params, &sig.Results} {
		n, err := r.VecCount(1)
		if err != nil {
			return signature{}, err
		}
		for ; n > 0; n-- {
			t, _, err := r.ReadValueType()
			if err != nil {
				return signature{}, err
			}
			*list = append(*list, t)
		}
	}
	return sig, nil
}

// constantBody reports the value of a function body that is one constant
// and nothing else, as the ABI's scalar exports usually are.
func constantBody(c *wasmbin.Code) (uint64, bool) {
	if c.Locals != 0 {
		return 0, false
	}
	w := c.Walker()
	var in wasmbin.Instruction
	if ok, err := w.Next(&in); !ok || err != nil || (in.Opcode != wasmbin.OpcodeI32Const && in.Opcode != wasmbin.OpcodeI64Const) {
		return 0, false
	}
	v := in.Value
	if in.Opcode == wasmbin.OpcodeI32Const {
		v = uint64(uint32(v))
	}
	if ok, err := w.Next(&in); !ok || err != nil || in.Opcode != wasmbin.OpcodeEnd {
		return 0, false
	}
	if ok, err := w.Next(&in); ok || err != nil {
		return 0, false
	}
	return v, true
}

// inspectStatic is InspectStatic: precheck's limits, then the bytes read
// by readStatic, then the values an earlier InspectRun remembered. Its
// cost is precheck's (linear in the module's size, bounded by its limits;
// skipped when the cache says these bytes passed the same limits) and a
// sha256; nothing the module contains is executed or compiled.
func (r *Runtime) inspectStatic(ctx context.Context, wasm []byte, policy Policy) (*ModuleInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	info := &ModuleInfo{Size: len(wasm), SHA256: digest(wasm), Mode: InspectStatic}
	entry := r.cachedEntry(info.SHA256)
	limits := loadLimits(policy).Key()
	prechecked := entry != nil && entry.Prechecked == limits
	if !prechecked {
		// The limits Load checks before any compile: a module over them
		// is refused whatever else it is.
		if _, err := precheck.Check(wasm, loadLimits(policy)); err != nil {
			if errors.Is(err, precheck.ErrMalformed) {
				return nil, fmt.Errorf("%w: not a valid WebAssembly module: %w", ErrInvalidModule, err)
			}
			return nil, fmt.Errorf("%w: %w", ErrInvalidModule, err)
		}
	}
	// readStatic is bounded on its own (a linear decode, fuzzed), which
	// is what makes skipping precheck on a cache hit safe: the limits are
	// what Load enforces, not what keeps this read cheap.
	st, err := readStatic(wasm)
	if err != nil {
		return nil, fmt.Errorf("%w: not a valid WebAssembly module: %w", ErrInvalidModule, err)
	}
	info.describe(st, r.host)
	info.Problems = append(st.reservedProblems(), validate(hideReservedImports{st}, r.host)...)
	info.readConstants(st)
	info.recallResult(entry, st)
	info.checkValues()
	info.readMetadata(wasm)
	if !prechecked {
		r.remember(info, limits, entry)
	}
	return info, nil
}
