package wasmprovider

import (
	"context"

	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Client is what the Reconciler needs from the API server for
// WasmProviders (cluster scoped). NewRESTClient implements it; tests use
// an in-memory one.
type Client interface {
	Get(ctx context.Context, name string) (*wasmprovv1alpha1.WasmProvider, error)
	List(ctx context.Context, opts metav1.ListOptions) (*wasmprovv1alpha1.WasmProviderList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	UpdateStatus(ctx context.Context, wp *wasmprovv1alpha1.WasmProvider) (*wasmprovv1alpha1.WasmProvider, error)
}
