// Package precheck looks at an untrusted WebAssembly module before
// anything compiles or instruments it, in one linear pass that allocates
// nothing per item it reads, and refuses the modules that would cost the
// host more than a provider ever needs: too large, too many of anything,
// functions too deep, too long or with too many locals, loops or br_table
// targets (the compile bombs), and the features a provider has no use for
// and the host cannot bound (a start function, imports other than
// functions, shared, 64-bit or several memories, 64-bit tables). It also
// gives every table a maximum, so table.grow cannot take the host's
// memory past MaxTableEntries entries a table.
//
// Check returns the module to compile (the input itself unless a table
// needed a maximum) or an error: one wrapping ErrRejected (a *Rejection,
// naming the limit) or one wrapping ErrMalformed (the module does not
// decode). Both mean the module is invalid for the host.
package precheck

import (
	"fmt"
	"math"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// Stats are what a module has, for each limit: the counts, and for the
// per-function and per-table limits the largest value in any function or
// table.
type Stats struct {
	ModuleBytes       int
	Types             int
	MaxTypeParams     int
	MaxTypeResults    int
	Imports           int
	Functions         int
	Tables            int
	Tags              int
	Globals           int
	Exports           int
	ElementSegments   int
	Elements          int
	DataSegments      int
	DataBytes         int
	MaxTableMin       int // the largest initial table size
	TableEntries      int // the tables' initial sizes summed
	MaxFunctionBytes  int
	MaxLocals         int
	MaxNesting        int
	MaxBrTableTargets int
	MaxLoops          int
	MaxInstructions   int
	MaxFlowUnits      int // the most control-flow units in one function
	FlowWork          int // the sum over the functions of their units squared
	BulkInstructions  int // bulk memory and table instructions and memory.grow over the module
	FlowUnits         int // control-flow units over the module
	MaxLocalsWork     int // the most locals work (see Limits.MaxLocalsWork) in one function
	LocalsWork        int // locals work over the module
	MaxMemoryAccesses int // the most loads, stores, table.get and table.set in one function
	MemoryAccesses    int // loads, stores, table.get and table.set over the module
	TablesRewritten   int // tables with no maximum (Check: or one above MaxTableEntries), which Check gives one
}

// Check checks wasm against l (zero fields: DefaultLimits) and returns
// the module to compile: wasm itself, not a copy, unless a table has no
// maximum or one above MaxTableEntries, which the returned copy sets to
// MaxTableEntries.
func Check(wasm []byte, l Limits) ([]byte, error) {
	c := checker{l: l.withDefaults(), wasm: wasm}
	if err := c.run(); err != nil {
		return nil, err
	}
	if len(c.rewrites) == 0 {
		return wasm, nil
	}
	return c.rewriteTables(), nil
}

// Measure returns what wasm has for each limit, checking none (it still
// refuses a module that does not decode, and the rules that are not
// numbers: a start section, a non-function import, a shared, 64-bit or
// second memory, a 64-bit table).
func Measure(wasm []byte) (Stats, error) {
	c := checker{l: unlimited, wasm: wasm}
	err := c.run()
	return c.st, err
}

var unlimited = Limits{
	MaxModuleBytes: math.MaxInt, MaxTypes: math.MaxInt, MaxTypeParams: math.MaxInt, MaxTypeResults: math.MaxInt,
	MaxImports: math.MaxInt, MaxFunctions: math.MaxInt, MaxTables: math.MaxInt, MaxTags: math.MaxInt,
	MaxGlobals: math.MaxInt, MaxExports: math.MaxInt, MaxElementSegments: math.MaxInt, MaxElements: math.MaxInt,
	MaxDataSegments: math.MaxInt, MaxDataBytes: math.MaxInt, MaxTableEntries: math.MaxInt, MaxInitialTableEntries: math.MaxInt,
	MaxFunctionBytes: math.MaxInt, MaxLocals: math.MaxInt, MaxNesting: math.MaxInt,
	MaxBrTableTargets: math.MaxInt, MaxLoops: math.MaxInt, MaxInstructions: math.MaxInt,
	MaxFlowUnits: math.MaxInt, MaxFlowWork: math.MaxInt, MaxBulkInstructions: math.MaxInt, MaxModuleFlowUnits: math.MaxInt,
	MaxLocalsWork: math.MaxInt, MaxModuleLocalsWork: math.MaxInt, MaxMemoryAccesses: math.MaxInt,
	MaxModuleMemoryAccesses: math.MaxInt,
}

type checker struct {
	l    Limits
	wasm []byte
	st   Stats

	// typeParams, typeResults: each type's parameter and result counts
	// (at most MaxTypes).
	typeParams, typeResults []uint32
	// funcs: the function section, read in step with the code section.
	funcs     wasmbin.Reader
	nFuncs    uint32
	importFns uint32
	codeSeen  bool
	memories  int
	haveNames bool
	flowWork  uint64
	bulk      uint64 // bulk memory and table instructions, memory.grow
	flowTotal uint64
	localWork uint64 // locals work over the functions so far
	accesses  uint64 // memory and table accesses over the functions so far
	flow      flowModel

	tableSec wasmbin.Section
	rewrites []wasmbin.Limits // tables to give MaxTableEntries as maximum
}

// exceed returns the rejection for a limit exceeded.
func exceed(limit string, value uint64, max int, offset int, where, what string) error {
	return &Rejection{Limit: limit, Value: value, Max: uint64(max), Where: where, Offset: offset, What: what}
}

func refuse(rule string, offset int, where, what string) error {
	return &Rejection{Limit: rule, Where: where, Offset: offset, What: what}
}

func at(what string, offset int) string { return fmt.Sprintf("%s (at offset 0x%x)", what, offset) }

// count checks a section's item count against a limit.
func (c *checker) count(limit string, n uint64, max int, s *wasmbin.Section, noun string) error {
	if n > uint64(max) {
		return exceed(limit, n, max, s.Offset, at("the "+wasmbin.SectionIDName(s.ID)+" section", s.Offset),
			fmt.Sprintf("declares %d %s", n, noun))
	}
	return nil
}

func (c *checker) run() error {
	if len(c.wasm) > c.l.MaxModuleBytes {
		return exceed("MaxModuleBytes", uint64(len(c.wasm)), c.l.MaxModuleBytes, 0, "the module",
			fmt.Sprintf("has %d bytes", len(c.wasm)))
	}
	c.st.ModuleBytes = len(c.wasm)
	secs, err := wasmbin.NewSections(c.wasm)
	if err != nil {
		return err
	}
	var s wasmbin.Section
	for {
		ok, err := secs.Next(&s)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if err := c.section(&s); err != nil {
			return err
		}
	}
	if c.nFuncs > 0 && !c.codeSeen {
		return malformed(len(c.wasm), "%d functions declared but no code section", c.nFuncs)
	}
	return nil
}

func (c *checker) section(s *wasmbin.Section) error {
	r := s.Reader()
	var err error
	switch s.ID {
	case wasmbin.SectionIDCustom:
		return c.custom(s)
	case wasmbin.SectionIDType:
		err = c.types(s, &r)
	case wasmbin.SectionIDImport:
		err = c.imports(s, &r)
	case wasmbin.SectionIDFunction:
		err = c.functions(s, &r)
	case wasmbin.SectionIDTable:
		err = c.tables(s, &r)
	case wasmbin.SectionIDMemory:
		err = c.memoriesSection(s, &r)
	case wasmbin.SectionIDTag:
		err = c.tags(s, &r)
	case wasmbin.SectionIDGlobal:
		err = c.globals(s, &r)
	case wasmbin.SectionIDExport:
		err = c.exports(s, &r)
	case wasmbin.SectionIDStart:
		idx, _ := r.U32()
		return refuse("NoStartSection", s.Offset, at("the start section", s.Offset),
			fmt.Sprintf("names function %d: a start function runs inside instantiation, where the host cannot put it under the call deadline (providers are WASI reactors, initialised by _initialize)", idx))
	case wasmbin.SectionIDElement:
		err = c.elements(s, &r)
	case wasmbin.SectionIDDataCount:
		_, err = r.U32()
	case wasmbin.SectionIDCode:
		err = c.code(s, &r)
	case wasmbin.SectionIDData:
		err = c.data(s, &r)
	}
	if err != nil {
		return err
	}
	if !r.Done() {
		return malformed(r.Offset(), "%d bytes left at the end of the %s section", r.Len(), wasmbin.SectionIDName(s.ID))
	}
	return nil
}
