// Package providerconfig holds the typed view of a Machine's
// spec.providerSpec.value, wire compatible (JSON) with kubermatic
// machine-controller's sdk/providerconfig package.
//
// Config is the envelope every provider shares (ssh keys, cloud provider
// name and spec, operating system name and spec, static network config).
// The cloud provider and operating system specs stay runtime.RawExtension,
// exactly as upstream, so this package neither needs nor loses
// provider-specific fields.
//
// ConfigVarString and ConfigVarBool are the "config variables" that provider
// specs use for values that may be given inline or read from a Secret or
// ConfigMap. Their JSON form is polymorphic (a bare scalar or an object) and
// is reproduced here as upstream defines it; see their MarshalJSON and
// UnmarshalJSON for the exact rules and the few places where this package
// deliberately differs from upstream.
//
// The package depends only on the standard library and
// k8s.io/apimachinery (no k8s.io/api, no client-go), so that code which
// merely parses provider configs stays light. For that reason the
// Secret/ConfigMap selectors carry their own ObjectReference type instead
// of embedding corev1.ObjectReference as upstream does; its JSON shape is
// identical.
package providerconfig
