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
// the bench guests), except the four that bound compile time itself:
// MaxModuleBytes (1.9 times), MaxFlowUnits (2.6 times), MaxFlowWork (1.8
// times) and MaxModuleFlowUnits (2.3 times), set so that the worst module
// within all the limits takes wazero at most about 2 times the CPU time
// of the largest real guest to compile (TestWorstCase).
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
	MaxElements        int // elements over all element segments
	MaxDataSegments    int
	MaxDataBytes       int // bytes over all data segments

	// MaxTableEntries bounds every table: its initial size may not exceed
	// it, and a table with no maximum or a larger one is rewritten to have
	// it as its maximum, so table.grow past it fails (returns -1): a
	// table's elements are host memory, outside the linear-memory limit.
	MaxTableEntries int

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

	// MaxBulkInstructions bounds the bulk memory and table instructions
	// (memory.init, copy, fill; table.init, copy, grow, fill) and
	// memory.grow over the whole module: wazero compiles each into code
	// costing about 50 µs of compile time, wherever it is.
	MaxBulkInstructions int
}

// DefaultLimits are the limits a zero Limits field stands for. The
// largest value in any real guest is in the comment.
var DefaultLimits = Limits{
	MaxModuleBytes: 32 << 20, // 17,819,851 (hetzner-hcloudgo); see TestWorstCase

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
	MaxElements:        1 << 20,  // 9,758
	MaxDataSegments:    400_000,  // 100,000 (the Go linker's own cap)
	MaxDataBytes:       32 << 20, // 5,935,125
	MaxTableEntries:    1 << 18,  // 13,854 (a table's initial size)

	MaxFunctionBytes:    256 << 10,   // 50,799
	MaxLocals:           10_000,      // 21
	MaxNesting:          2_500,       // 550
	MaxBrTableTargets:   10_000,      // 1,145
	MaxLoops:            1_000,       // 16
	MaxInstructions:     1 << 17,     // 22,772
	MaxFlowUnits:        8_192,       // 3,091
	MaxFlowWork:         500_000_000, // 274,816,950
	MaxModuleFlowUnits:  2_000_000,   // 851,092
	MaxBulkInstructions: 20_000,      // 4,582
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
const rules = 1

// Key names the verdict of Check under l: two limits with the same Key
// check every module alike. It covers every effective limit (the defaults
// of zero fields included, so a host whose defaults changed rechecks) and
// the rules; it is short enough for a file name.
func (l Limits) Key() string {
	sum := sha256.Sum256(fmt.Appendf(nil, "precheck rules %d %+v", rules, l.withDefaults()))
	return hex.EncodeToString(sum[:8])
}
