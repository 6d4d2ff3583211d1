// Package infrastructure is wasmprov's Cluster API infrastructure
// provider: the reconcilers of WasmMachines and WasmClusters
// (infrastructure.wasmprov.io/v1alpha1), Cluster API's InfraMachine and
// InfraCluster of contract v1beta2. A WasmMachine's instance is made by
// the wasmprov provider its spec.providerSpec names — the providerSpec a
// machine-controller Machine carries — through the same provider.Interface
// the Machine controller calls, so one .wasm serves both ecosystems.
//
// Cluster API's own controllers do the rest (MachineSets,
// MachineDeployments, Node linking, drain, bootstrap data): this package
// reads Cluster API's Machines and Clusters, never writes them, and reads
// them as unstructured objects so that it depends on no Cluster API
// module (and upgrades none of an embedder's Kubernetes modules).
//
// The reconcilers are controller-runtime's builder controllers over the
// manager's cache (controller.NewManager); RATIONALE.md says why they,
// unlike the Machine controller, are.
package infrastructure
