// Package registry serves machine-controller cloud providers by name from
// a wasmprov runtime, and replaces them while they serve.
//
//	rt, _ := runtime.New()
//	reg := registry.New(rt)
//	_ = reg.LoadDir(ctx, "/etc/wasmprov/providers") // NAME.wasm + optional NAME.yaml
//	_ = reg.Watch(ctx)                              // hot reload
//	_ = reg.RegisterImage(ctx, "aws", registry.Image{Ref: "ghcr.io/acme/aws@sha256:…"})
//	h, err := reg.Get("hetzner")                    // like cloudprovider.ForProvider
//	var _ provider.Interface = h
//
// Hot reload. A new version of a provider is read, compiled, validated,
// smoke-tested and pre-warmed off the call path, then swapped in
// atomically. Calls already running finish on the old version, which is
// then closed. A version that fails any step is rejected (an EventRejected
// and a log line say why) and the previous one keeps serving.
//
// One source per name. A provider name comes from one place at a time: a
// directory given to LoadDir, an fs.FS (RegisterFS), bytes (Register) or
// an OCI artifact (RegisterImage). A second source for the same name is
// refused with ErrDuplicateProvider; code may hot-swap a name it
// registered from code, from any of the three code sources to another,
// but never take a name a directory provides (nor a directory one code
// provides).
//
// Images. A directory's "NAME.provider.yaml" entry and RegisterImage,
// which a Kubernetes controller calls for a WasmProvider resource, are one
// path: the entry is decoded into the same Image value. The reference is
// resolved (a digest needs nothing; a tag is resolved again with
// PullAlways, its default), the artifact pulled through the OCI client
// (Image.Client, else WithOCIClient) and its content store, so a digest
// pulled once loads without the network, checked by the Verifier when the
// Image has a verify block, then prepared and swapped like a file.
// Calling RegisterImage again with an equal Image is a no-op: no reload,
// no request for a digest the store holds, one resolve for a PullAlways
// tag. Each name remembers the last 16 artifacts it verified and pins
// them in the store (oci.Store.Pin), so rolling back to one needs neither
// the Verifier nor the registry. Entries in a watched directory are polled
// (WithImagePollInterval); a code-registered image is re-read when its
// caller registers it again, or by Reload and ReloadAll.
//
// Refusals. RegisterImage and Register return a *VersionError when a
// version is refused: its Stage says which step refused it (StagePull:
// ErrPull or ErrInvalidImage; StageVerify: ErrVerification or
// ErrNoVerifier; StageLoad: the runtime's and metadata's errors, e.g.
// runtime.ErrInvalidModule, metadata.ErrIncompatible; StageSmoke:
// ErrSmokeTest), with the reference, the digest and the module's digest
// once known. Its message is the same for the same cause and holds no
// credential. A name refused to a source (ErrDuplicateProvider, an
// invalid name) is a plain error: no version was tried.
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
