// Package hostmodule implements the host side of the wasmprov Provider
// ABI: the wasmprov_v1 import module (abi/SPEC.md §6) and the binding of
// an embedder's custom host functions (package hostfuncs) behind the same
// checks. module.go holds the table of every function; there is one file
// per capability: log, http, machine_update, pv_list and config_var; core.go
// for the functions every guest gets (input, take_result, output,
// set_error); custom.go for the embedder's functions.
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
// by import path, so runtime/internal/hostmodule could not be imported from
// there. Nothing outside this repository can import it; embedders add host
// functions through package hostfuncs and runtime.WithHostFunctions.
package hostmodule
