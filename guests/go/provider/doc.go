// Package provider is the Go guest SDK of wasmprov: write a machine-controller
// cloud provider in plain Go, build it with the standard toolchain
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o myprovider.wasm .
//
// and load the .wasm into any wasmprov host, where it behaves as a
// cloud.Provider.
//
// A provider implements Provider and registers itself from init:
//
//	func init() {
//		provider.Register(&myProvider{}, provider.Needs(abi.CapHTTP, abi.CapConfigVar))
//	}
//
//	func main() {} // required by the toolchain, never called
//
// The SDK implements the ABI (abi/SPEC.md): it exports the eight method
// functions and the optional SetMetricsForMachines (answered with no
// samples unless the provider implements MetricsReporter), pulls inputs
// lazily from the host, decodes them into the light Machine types of this
// package, maps returned errors onto ABI status codes, and turns a panic
// into an error. Host services are plain Go: an
// http.RoundTripper (Transport) over the host's policy-checked HTTP, typed
// helpers for Machine updates, PersistentVolume listing and config variables,
// and a slog.Logger whose records the host's logger receives.
//
// A provider whose cloud deletes asynchronously registers with AsyncDelete
// and returns DeletionInProgress from Delete until the instance is gone:
// the host calls Delete again later (machine-controller's Cleanup returning
// false) instead of the call blocking until the cloud is done.
//
// The package depends on the standard library and package abi only, so guest
// modules stay small and compile fast. The same provider code also runs
// natively (runtime/native.Load), which is how wasmprov's tests compare
// a wasm provider with the same code compiled for the host.
package provider
