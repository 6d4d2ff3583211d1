package precheck

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Limits bound what a module may declare. A zero (or negative) field
// means the default in DefaultLimits.
//
// The defaults come from measurements (TestDefaultsOverRealGuests prints
// the table): each is at least 4 times the largest value in the real
// guests (the Go providers, the 17.8 MB hcloud-go one, the C provider,
// the bench guests), except those that bound compile time itself:
// MaxModuleBytes (1.9 times), MaxFlowUnits (2.6 times), MaxFlowWork (1.8
// times), MaxModuleFlowUnits (2.3 times) and MaxModuleMemoryAccesses (2.0
// times), set so that the worst module within all the limits takes wazero
// a bounded multiple of the CPU time of the largest real guest to compile
// (TestWorstCase; docs/SECURITY.md has the figures).
type Limits struct {
	// MaxModuleBytes bounds the module's size: the cost of every linear
	// pass (decoding, instrumenting, compiling straight-line code) is
	// proportional to it.
	MaxModuleBytes int

	// Counts over the module.
	MaxTypes           int // function types
	MaxTypeParams      int // parameters of one function type
	MaxTypeResults     int // results of one function type
	MaxImports         int
	MaxFunctions       int // functions the module defines
	MaxTables          int
	MaxTags            int
	MaxGlobals         int // globals the module defines
	MaxExports         int
	MaxElementSegments int
	// MaxElements bounds the elements over all element segments: every
	// instance evaluates each (a function reference allocates about 32
	// bytes on wazero, kept while the instance lives, and leaves as much
	// again to collect) when it starts.
	MaxElements     int
	MaxDataSegments int
	MaxDataBytes    int // bytes over all data segments

	// MaxTableEntries bounds every table: its initial size may not exceed
	// it, and a table with no maximum or a larger one is rewritten to have
	// it as its maximum, so table.grow past it fails (returns -1): a
	// table's elements are host memory, outside the linear-memory limit.
	MaxTableEntries int
	// MaxInitialTableEntries bounds the tables' initial sizes summed:
	// every instance allocates them (8 bytes an entry on wazero) when it
	// starts, before the guest runs.
	MaxInitialTableEntries int

	// Per function body.
	MaxFunctionBytes  int // the body's size, locals and instructions
	MaxLocals         int // parameters plus declared locals
	MaxNesting        int // control structures open at once, the body's own included
	MaxBrTableTargets int // targets of one br_table, the default included
	MaxLoops          int // loop instructions
	MaxInstructions   int // instructions

	// MaxFlowUnits bounds a function's control-flow units: one for each
	// block, loop, if, else, end, br, br_if, return, unreachable,
	// exception-handling and br_on_* instruction; one for every 8
	// br_table targets and for each try_table catch clause; two more for
	// a loop (the if and end of the interrupt check put in every loop
	// header); one for each instruction that can trap on its operands
	// (division, remainder, float-to-int truncation, call_indirect,
	// call_ref); eight for each bulk memory or table instruction and
	// memory.grow. wazero's compiler takes time quadratic in them (its
	// SSA construction walks chains of single-predecessor blocks to find
	// a local's value; its block passes revisit blocks), so MaxFlowWork
	// bounds the sum over the functions of their squares, and
	// MaxFlowUnits one function (one compilation worker).
	MaxFlowUnits int
	MaxFlowWork  int
	// MaxModuleFlowUnits bounds the control-flow units over the module:
	// each costs wazero some microseconds (a division in a small
	// function, with its trap checks, about 5 µs), however the units are
	// spread over the functions.
	MaxModuleFlowUnits int

	// MaxLocalsWork bounds a function's locals work, what wazero's SSA
	// construction spends on its locals (flow.go): its values (locals,
	// parameters included, plus the most values one of its blocks takes or
	// leaves, or it returns) squared times the predecessors of its joins
	// (the instrumentation's checks included), plus its values times the
	// walks back from those predecessors, plus the walks of its reads.
	// wazero gives a join a parameter for each local read after it and
	// removes the redundant ones in time quadratic in their number, and
	// walks chains of one-predecessor blocks for every read and every
	// join, remembering nothing: one function of 9,999 locals and 250 KiB
	// of local-to-local arithmetic, which the instrumentation splits with
	// 65 checks, took 2-4 s to compile; 1,000 locals read after 1,000
	// empty ifs, 2.5 s; a loop of 100 locals left and entered again from
	// 8,000 br_if, 36 s. At most about 12 ns of compile time a unit.
	// MaxLocalsWork bounds one function (one compilation worker, which
	// looks at the load's deadline only between functions),
	// MaxModuleLocalsWork the sum over the module.
	MaxLocalsWork       int
	MaxModuleLocalsWork int

	// MaxMemoryAccesses bounds a function's loads and stores (plain, SIMD
	// and atomic) and table.get and table.set, MaxModuleMemoryAccesses the
	// module's: wazero compiles each whose bounds it cannot prove from an
	// earlier access in the same block into a check and an exit of their
	// own, 10-15 µs of compile time (a load of the address the previous
	// load read), wherever it is.
	MaxMemoryAccesses       int
	MaxModuleMemoryAccesses int

	// MaxBulkInstructions bounds the bulk memory and table instructions
	// (memory.init, copy, fill; table.init, copy, grow, fill) and
	// memory.grow over the whole module: wazero compiles each into code
	// costing about 50 µs of compile time, wherever it is.
	MaxBulkInstructions int
}

// DefaultLimits are the limits a zero Limits field stands for. The
// largest value in any real guest is in the comment.
var DefaultLimits = Limits{
	MaxModuleBytes: 32 << 20, // 17,920,756 (hetzner-hcloudgo); see TestWorstCase

	MaxTypes:           10_000,   // 21
	MaxTypeParams:      1_000,    // 9
	MaxTypeResults:     1_000,    // 1
	MaxImports:         1_000,    // 38
	MaxFunctions:       100_000,  // 9,758
	MaxTables:          4,        // 1
	MaxTags:            1_000,    // 0
	MaxGlobals:         10_000,   // 8
	MaxExports:         10_000,   // 19
	MaxElementSegments: 1_000,    // 1
	MaxElements:        1 << 16,  // 9,802
	MaxDataSegments:    400_000,  // 100,000 (the Go linker's own cap)
	MaxDataBytes:       32 << 20, // 5,935,125
	MaxTableEntries:    1 << 18,  // 13,898 (a table's initial size)

	MaxInitialTableEntries: 1 << 18, // 13,898

	MaxFunctionBytes:        256 << 10,   // 50,799
	MaxLocals:               10_000,      // 21
	MaxNesting:              2_500,       // 550
	MaxBrTableTargets:       10_000,      // 1,145
	MaxLoops:                1_000,       // 16
	MaxInstructions:         1 << 17,     // 22,772
	MaxFlowUnits:            8_192,       // 3,091
	MaxFlowWork:             500_000_000, // 274,816,950
	MaxModuleFlowUnits:      2_000_000,   // 851,092
	MaxBulkInstructions:     20_000,      // 4,582
	MaxLocalsWork:           10_000_000,  // 1,081,226
	MaxModuleLocalsWork:     600_000_000, // 144,095,467
	MaxMemoryAccesses:       1 << 14,     // 3,865
	MaxModuleMemoryAccesses: 1_300_000,   // 658,601
}

// withDefaults returns l with every zero field set from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	for _, f := range []struct {
		v   *int
		def int
	}{
		{&l.MaxModuleBytes, d.MaxModuleBytes},
		{&l.MaxTypes, d.MaxTypes},
		{&l.MaxTypeParams, d.MaxTypeParams},
		{&l.MaxTypeResults, d.MaxTypeResults},
		{&l.MaxImports, d.MaxImports},
		{&l.MaxFunctions, d.MaxFunctions},
		{&l.MaxTables, d.MaxTables},
		{&l.MaxTags, d.MaxTags},
		{&l.MaxGlobals, d.MaxGlobals},
		{&l.MaxExports, d.MaxExports},
		{&l.MaxElementSegments, d.MaxElementSegments},
		{&l.MaxElements, d.MaxElements},
		{&l.MaxDataSegments, d.MaxDataSegments},
		{&l.MaxDataBytes, d.MaxDataBytes},
		{&l.MaxTableEntries, d.MaxTableEntries},
		{&l.MaxInitialTableEntries, d.MaxInitialTableEntries},
		{&l.MaxFunctionBytes, d.MaxFunctionBytes},
		{&l.MaxLocals, d.MaxLocals},
		{&l.MaxNesting, d.MaxNesting},
		{&l.MaxBrTableTargets, d.MaxBrTableTargets},
		{&l.MaxLoops, d.MaxLoops},
		{&l.MaxInstructions, d.MaxInstructions},
		{&l.MaxFlowUnits, d.MaxFlowUnits},
		{&l.MaxFlowWork, d.MaxFlowWork},
		{&l.MaxBulkInstructions, d.MaxBulkInstructions},
		{&l.MaxModuleFlowUnits, d.MaxModuleFlowUnits},
		{&l.MaxLocalsWork, d.MaxLocalsWork},
		{&l.MaxModuleLocalsWork, d.MaxModuleLocalsWork},
		{&l.MaxMemoryAccesses, d.MaxMemoryAccesses},
		{&l.MaxModuleMemoryAccesses, d.MaxModuleMemoryAccesses},
	} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	return l
}

// rules names the checks Check makes beyond the numbers in Limits. Bump it
// when a rule is added or changed: a verdict cached under Key (package
// instrumented keeps the modules that passed) must not outlive the rules it
// was reached by.
const rules = 2 // 2: NoRefFuncInCode

// Key names the verdict of Check under l: two limits with the same Key
// check every module alike. It covers every effective limit (the defaults
// of zero fields included, so a host whose defaults changed rechecks) and
// the rules; it is short enough for a file name.
func (l Limits) Key() string {
	sum := sha256.Sum256(fmt.Appendf(nil, "precheck rules %d %+v", rules, l.withDefaults()))
	return hex.EncodeToString(sum[:8])
}
