// Package runtime loads machine-controller cloud providers compiled to
// WebAssembly and runs them in a sandbox (wazero by default, wasmtime with
// -tags wasmtime and WithEngine), behind provider.Interface, the interface
// wasmprov's controllers call every provider through (cloud.SeedProvider and
// cloudprovider.New adapt it to machine-controller's two contracts).
//
//	rt, err := runtime.New()
//	p, err := rt.Load(ctx, "providers/fake.wasm")
//	var _ provider.Interface = p
//
// Each loaded provider is compiled once and served by a capped pool of
// instances: one caller per instance, instances that trapped or timed out
// are thrown away, and every call runs with the deadline of its context (or
// the policy's call timeout). With a Policy.IdleTimeout the pool is lazy:
// instances idle that long are closed, down to none, and the next call
// starts one, so a process can hold many rarely called providers without an
// instance each. What a guest may do — hosts it may reach, environment
// variables, memory, capabilities — is its Policy.
//
// Inspect describes a module before it is trusted. By default it compiles
// the module and calls its ABI version and capability exports (InspectRun);
// WithInspectMode(InspectStatic) reads the bytes only, in milliseconds,
// and takes those two values from constant-bodied exports or from what an
// earlier run of the same bytes left in the compilation cache directory.
// ModuleInfo says which mode ran, whether function bodies were validated,
// and where each value came from.
package runtime
