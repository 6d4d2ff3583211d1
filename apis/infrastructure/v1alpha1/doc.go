// Package v1alpha1 is the infrastructure.wasmprov.io/v1alpha1 API: a
// Cluster API infrastructure provider whose machines are created by
// wasmprov providers. A WasmMachine is Cluster API's InfraMachine (the
// contract of cluster.x-k8s.io/v1beta2): a CAPI Machine points at it
// through spec.infrastructureRef, and the wasmprov controller calls the
// provider its spec.providerSpec names — the same providerSpec a
// machine-controller Machine carries, so one .wasm and one spec serve both
// ecosystems. WasmMachineTemplate is the template MachineSets and
// MachineDeployments stamp WasmMachines from; WasmCluster is the minimal
// InfraCluster a Cluster needs (it provisions nothing: the control plane
// endpoint is given, or left to the control plane provider).
//
// zz_generated.deepcopy.go is written by hand (this module does not run
// deepcopy-gen); deepcopy_test.go fails when a field is shared. The CRDs
// are under controller/crd; their test keeps the schemas and these types
// in step.
//
// +k8s:deepcopy-gen=package,register
// +groupName=infrastructure.wasmprov.io
package v1alpha1
