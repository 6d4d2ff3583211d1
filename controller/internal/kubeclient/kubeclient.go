// Package kubeclient is how both controllers read and write this module's
// own kinds (Machines, WasmProviders): controller-runtime's uncached
// client, typed per kind with generics. Neither kind has a generated
// clientset; this is the one client code both use.
package kubeclient

import (
	"context"
	"fmt"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	infrav1alpha1 "github.com/wasmprov/wasmprov/apis/infrastructure/v1alpha1"
	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Scheme knows this module's API groups: cluster.k8s.io/v1alpha1
// (Machines), wasmprov.io/v1alpha1 (WasmProviders) and
// infrastructure.wasmprov.io/v1alpha1 (Cluster API's WasmMachines,
// WasmMachineTemplates, WasmClusters); and core/v1, whose Secrets the
// WasmMachine reconciler reads (bootstrap data).
var Scheme = runtime.NewScheme()

func init() {
	// Both only add types to a new scheme; an error here is a programming
	// error in the types packages, caught by every test.
	if err := clusterv1alpha1.AddToScheme(Scheme); err != nil {
		panic(err)
	}
	if err := wasmprovv1alpha1.AddToScheme(Scheme); err != nil {
		panic(err)
	}
	if err := infrav1alpha1.AddToScheme(Scheme); err != nil {
		panic(err)
	}
	if err := corev1.AddToScheme(Scheme); err != nil {
		panic(err)
	}
	metav1.AddToGroupVersion(Scheme, metav1.SchemeGroupVersion)
}

// New returns a client of Scheme's kinds for cfg (copied, not changed).
// Their REST mappings are fixed (the CRDs are this module's), so no
// discovery request is made.
func New(cfg *rest.Config) (client.WithWatch, error) {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(clusterv1alpha1.SchemeGroupVersion.WithKind("Machine"), meta.RESTScopeNamespace)
	m.Add(wasmprovv1alpha1.SchemeGroupVersion.WithKind("WasmProvider"), meta.RESTScopeRoot)
	c, err := client.NewWithWatch(rest.CopyConfig(cfg), client.Options{Scheme: Scheme, Mapper: m})
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return c, nil
}

// Object is a pointer to a kind of Scheme.
type Object[T any] interface {
	*T
	client.Object
}

// List is a pointer to a list kind of Scheme.
type List[L any] interface {
	*L
	client.ObjectList
}

// Typed reads and writes one kind, O (its list LP) in the shape of
// client-go's typed clients: it returns what the API server answered and
// leaves the object it was given unchanged.
type Typed[T any, O Object[T], L any, LP List[L]] struct {
	c client.WithWatch
}

// For returns the typed client of one kind over c.
func For[T any, O Object[T], L any, LP List[L]](c client.WithWatch) Typed[T, O, L, LP] {
	return Typed[T, O, L, LP]{c: c}
}

// Get returns namespace/name ("" namespace for a cluster-scoped kind).
func (t Typed[T, O, L, LP]) Get(ctx context.Context, namespace, name string) (O, error) {
	out := O(new(T))
	if err := t.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// List lists in namespace ("" for all namespaces, or a cluster-scoped
// kind).
func (t Typed[T, O, L, LP]) List(ctx context.Context, namespace string, opts metav1.ListOptions) (LP, error) {
	out := LP(new(L))
	if err := t.c.List(ctx, out, &client.ListOptions{Namespace: namespace, Raw: &opts}); err != nil {
		return nil, err
	}
	return out, nil
}

// Watch watches in namespace ("" for all namespaces, or a cluster-scoped
// kind).
func (t Typed[T, O, L, LP]) Watch(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	return t.c.Watch(ctx, LP(new(L)), &client.ListOptions{Namespace: namespace, Raw: &opts})
}

// Create creates obj.
func (t Typed[T, O, L, LP]) Create(ctx context.Context, obj O) (O, error) {
	out := obj.DeepCopyObject().(O)
	if err := t.c.Create(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Update replaces obj's spec and metadata (the API server ignores the
// status here).
func (t Typed[T, O, L, LP]) Update(ctx context.Context, obj O) (O, error) {
	out := obj.DeepCopyObject().(O)
	if err := t.c.Update(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateStatus replaces obj's status through the status subresource (the
// API server ignores the spec there, and refuses a stale resourceVersion
// with a conflict).
func (t Typed[T, O, L, LP]) UpdateStatus(ctx context.Context, obj O) (O, error) {
	out := obj.DeepCopyObject().(O)
	if err := t.c.Status().Update(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Delete deletes namespace/name.
func (t Typed[T, O, L, LP]) Delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	obj := O(new(T))
	obj.SetNamespace(namespace)
	obj.SetName(name)
	return t.c.Delete(ctx, obj, &client.DeleteOptions{Raw: &opts})
}
