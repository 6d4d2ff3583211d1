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
//
// Claims: WasmProviders naming one cloud provider are ordered by creation
// time, then name; the first loads, the others load nothing and report
// Ready=False and Degraded=True with reason Conflict naming it. When it is
// deleted, or names another cloud provider, the next one takes over
// (re-registering the name with its own version); with no next one the
// name is unregistered.
//
// Status is a function of the current status and of what the reconcile
// found, and is written only when it differs (a refusal retried with
// backoff keeps its first time), so a spec refused for hours writes once.
// Events record transitions only: Loaded, Swapped, RolledBack (to one of
// status.revisions), and warnings for a new refusal or conflict.
package wasmprovider
