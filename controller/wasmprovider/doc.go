// Package wasmprovider reconciles wasmprov.io/v1alpha1 WasmProviders: for
// each one it fetches the module its spec names (an OCI artifact through
// the shared content store, a ConfigMap or a URL pinned by sha256),
// verifies it, and loads it into a runtime/registry under
// spec.cloudProvider — the registry's prepare, smoke test, pre-warm and
// swap, so a refused version leaves the previous one serving. It writes
// what happened to the WasmProvider's status and Events.
//
// Every controller replica runs a Reconciler, so standby replicas are warm
// and a leader change waits for no compilation; only the replica for which
// Options.IsLeader is true writes status and Events.
package wasmprovider
