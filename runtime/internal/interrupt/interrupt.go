package interrupt

import "errors"

// FormatVersion names the instrumenter's output format. Hosts that cache
// instrumented modules key the cache by it: bump it whenever InstrumentWith's
// output for some input changes (the golden tests pin the bytes, so such a
// change fails them first). 5: custom sections other than "name" are
// dropped, and adjacent data segments merged (mergeData). 6: memory.fill,
// memory.copy and memory.init longer than bulkChunk run in pieces, through
// helper functions appended to the module (bulk.go).
const FormatVersion = 6

// MemoryName is the export name of the interrupt flag's memory in
// FlagMemory mode. Both modes refuse a module that already exports it.
const MemoryName = "wasmprov_interrupt"

// Flag says where the instrumented checks read the interrupt flag.
type Flag int

// FlagMemory and FlagBudget keep the values they had next to the removed
// FlagGlobal (0), so that a cache keyed by a flag's value stays valid.
const (
	// FlagMemory: word 0 of an added 1-page memory (min 1, max 1) exported
	// as MemoryName (engines that cannot set a global from another thread:
	// wasmtime).
	FlagMemory Flag = iota + 1
	// FlagBudget: a private mutable i32 global from which every check
	// subtracts the work it guards; once spent it is reset to Budget and
	// the guest calls the imported YieldModule.YieldName, which the host
	// uses as a Go safe point and to stop the call (wazero).
	FlagBudget
)

const (
	// YieldModule is the import module of the yield function FlagBudget
	// adds.
	YieldModule = "wasmprov_interrupt"
	// YieldName is the import name of the yield function: (func), no
	// parameters, no results.
	YieldName = "yield"
	// Budget is the number of units (place.go: about a nanosecond of a
	// chain of simple instructions each) between two calls of the yield
	// function in FlagBudget mode: each check charges at least the units
	// run since the previous one, and the guest yields once the budget is
	// spent, so it runs at most Budget + maxRegion units between yields.
	Budget = 1 << 19
)

// ErrUnsupported wraps every reason InstrumentWith refuses a module.
var ErrUnsupported = errors.New("cannot instrument module for interruption")

// InstrumentWith returns the module instrumented to read the flag f says.
func InstrumentWith(wasm []byte, f Flag) ([]byte, error) {
	out, _, err := instrumentWith(wasm, f, options{budget: Budget, stack: StackLimit})
	return out, err
}

// instrument is InstrumentWith with FlagBudget's budget (the tests make it
// small, down to 1: a yield at every check); stats counts the checks it
// placed, by reason.
func instrument(wasm []byte, f Flag, budget int32) (out []byte, stats [numReasons]int, err error) {
	out, rep, err := instrumentWith(wasm, f, options{budget: budget, stack: StackLimit})
	return out, rep.stats, err
}

// report is what instrumentWith says of its work (tests and tuning): the
// checks placed, by reason, and (FlagBudget) each defined function's frame
// estimate, -1 for a function it does not count.
type report struct {
	stats  [numReasons]int
	frames []int32
}

// options are the limits FlagBudget writes into the module (the tests make
// them small).
type options struct {
	// budget: Budget.
	budget int32
	// stack: StackLimit.
	stack int32
}
