// Package hostfuncs implements the host side of the wasmprov Provider ABI:
// the wasmprov_v1 import module (abi/SPEC.md). There is one file per
// capability: log, http, machine_update, pv_list and config_var, and core.go
// for the functions every guest gets (input, take_result, output,
// set_error).
//
// Every function works on the *Call carried by the context the engine
// passes to host functions, so one compiled host module serves every
// instance and every provider; the per-provider policy lives in the Call's
// Env. The same Go implementations back the native runner
// (runtime/native), so a guest compiled to wasm and the same code run
// natively see identical host behaviour.
//
// The package is internal to the repository, not to runtime: the bench
// module (github.com/wasmprov/wasmprov/bench) binds these functions into a
// bare wazero runtime to measure the call floor, and Go's internal rule is
// by import path, so runtime/internal/hostfuncs could not be imported from
// there. Nothing outside this repository can import it; embedders reach the
// host functions only through runtime.
package hostfuncs
