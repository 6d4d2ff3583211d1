// Package interrupt rewrites a WebAssembly module so that a host can stop
// it at little cost, on every execution path the module can construct
// (runtime/RATIONALE.md, "Interruption", says why it works this way).
//
// InstrumentWith places checks by a pass over each function's control flow
// (place.go), so that no path runs more than about 2 µs of simple
// instructions without one. In FlagMemory mode (wasmtime) a check reads word
// 0 of an added one-page memory exported as MemoryName and traps when it is
// non-zero. In FlagBudget mode (wazero) a check charges the work it guards
// to a private global and, once Budget is spent, calls the imported
// YieldModule.YieldName, where the host can stop the call; a second global,
// exported as StackName, bounds the call stack (stack.go).
//
// A memory.fill, memory.copy or memory.init longer than bulkChunk, which an
// engine runs as one piece of compiled code, runs instead in pieces with a
// check between two, through a helper function the rewrite appends to the
// module (bulk.go); a shorter one pays a compare and a branch.
//
// The output keeps only the "name" custom section (a host reads any other,
// such as the provider metadata, from the module as shipped), so modules
// that differ only in custom sections instrument to the same bytes and
// share their compiled code; and it merges adjacent active data segments
// (mergeData), which engines otherwise pay for per segment in every
// instance.
//
// The rewriter decodes every instruction and fails closed: what it cannot
// follow, or an index that would reach what it adds, is an ErrUnsupported
// error, never a silently wrong module (a function index beyond the
// module's own would name a helper). Hosts key cached output by
// FormatVersion.
package interrupt
