// Package registry serves machine-controller cloud providers by name from
// a wasmprov runtime, and replaces them while they serve.
//
//	rt, _ := runtime.New()
//	reg := registry.New(rt)
//	_ = reg.LoadDir(ctx, "/etc/wasmprov/providers") // NAME.wasm + optional NAME.yaml
//	_ = reg.Watch(ctx)                              // hot reload
//	h, err := reg.Get("hetzner")                    // like cloudprovider.ForProvider
//	var _ cloud.Provider = h
//
// Hot reload. A new version of a provider is read, compiled, validated,
// smoke-tested and pre-warmed off the call path, then swapped in
// atomically. Calls already running finish on the old version, which is
// then closed. A version that fails any step is rejected (an EventRejected
// and a log line say why) and the previous one keeps serving.
//
// One source per name. A provider name comes from one place at a time: a
// directory given to LoadDir, an fs.FS (RegisterFS) or bytes (Register). A
// second source for the same name is refused with ErrDuplicateProvider;
// only code may hot-swap a name it registered from code.
//
// Handles. Get returns a *Handle that stays valid across reloads and even
// across a removal: every call goes to the version serving when the call
// starts, and a call that races with a swap is sent again to the new
// version, so a reload fails no call. A removed provider's calls fail with
// ErrProviderNotFound (class transient: a controller retries) until it
// comes back.
//
// The registry uses only runtime's exported API: everything it does, an
// embedding program could do with a runtime.Runtime of its own.
package registry
