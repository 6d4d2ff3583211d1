// Package v1alpha1 holds the cluster.k8s.io/v1alpha1 API types (Machine,
// MachineSet, MachineDeployment, MachineClass) as they are served and stored
// by kubermatic machine-controller.
//
// The types are written to be wire compatible, in JSON, with
// machine-controller's sdk/apis/cluster/v1alpha1 package, checked field by
// field against release v1.66.2 (module k8c.io/machine-controller/sdk,
// August 2026): every field has the same JSON name, the same Go kind (value,
// pointer, slice) and the same omitempty behaviour as upstream. That matters because these objects are
// shared with machine-controller, KubeOne and KKP through the API server:
// an object written by either side must decode on the other side without
// error, and re-encoding it must neither drop a field nor add one (a field
// that is emitted where upstream omits it, or the other way round, shows up
// as a spurious diff and a needless update). Provider specific configuration
// is carried as runtime.RawExtension, so its bytes survive a round trip
// untouched even when this module does not know every field in it; see the
// sibling package providerconfig for the typed view of it.
//
// The constants that upstream keeps in sdk/apis/cluster/common (machine
// status errors, deployment strategy types) live in this package, because
// nothing else here needs a separate unversioned package.
//
// zz_generated.deepcopy.go is written by hand (this module does not run
// deepcopy-gen); keep it in step with the types whenever a field is added.
//
// +k8s:deepcopy-gen=package,register
// +groupName=cluster.k8s.io
package v1alpha1
