// Package v1alpha1 is the wasmprov.io/v1alpha1 API: the WasmProvider
// resource, a WebAssembly cloud provider that `wasmprov controller` pulls,
// verifies, loads and reports on, instead of a directory of .wasm files.
//
// A WasmProvider is cluster scoped and privileged: its policy decides which
// hosts the guest may reach and which namespaces' Secrets it may read, so
// whoever may create one holds the controller's reach over the cluster.
// docs/WASMPROVIDER.md says how to grant it.
//
// zz_generated.deepcopy.go is written by hand (this module does not run
// deepcopy-gen); deepcopy_test.go fails when a field is shared. The CRD is
// controller/crd/wasmprov.io_wasmproviders.yaml; its test there keeps its
// schema and these types in step.
//
// +k8s:deepcopy-gen=package,register
// +groupName=wasmprov.io
package v1alpha1
