package wasmprovider

import (
	"context"

	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/controller/internal/kubeclient"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
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

// RESTClient is the WasmProvider client against a real API server
// (controller-runtime's uncached client, typed for WasmProviders).
type RESTClient struct {
	t kubeclient.Typed[wasmprovv1alpha1.WasmProvider, *wasmprovv1alpha1.WasmProvider, wasmprovv1alpha1.WasmProviderList, *wasmprovv1alpha1.WasmProviderList]
}

var _ Client = (*RESTClient)(nil)

// NewRESTClient returns a WasmProvider client for cfg (copied, not
// changed).
func NewRESTClient(cfg *rest.Config) (*RESTClient, error) {
	c, err := kubeclient.New(cfg)
	if err != nil {
		return nil, err
	}
	return &RESTClient{kubeclient.For[wasmprovv1alpha1.WasmProvider, *wasmprovv1alpha1.WasmProvider, wasmprovv1alpha1.WasmProviderList, *wasmprovv1alpha1.WasmProviderList](c)}, nil
}

// Get returns the WasmProvider name.
func (c *RESTClient) Get(ctx context.Context, name string) (*wasmprovv1alpha1.WasmProvider, error) {
	return c.t.Get(ctx, "", name)
}

// List lists WasmProviders.
func (c *RESTClient) List(ctx context.Context, opts metav1.ListOptions) (*wasmprovv1alpha1.WasmProviderList, error) {
	return c.t.List(ctx, "", opts)
}

// Watch watches WasmProviders.
func (c *RESTClient) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return c.t.Watch(ctx, "", opts)
}

// UpdateStatus replaces wp's status through the status subresource.
func (c *RESTClient) UpdateStatus(ctx context.Context, wp *wasmprovv1alpha1.WasmProvider) (*wasmprovv1alpha1.WasmProvider, error) {
	return c.t.UpdateStatus(ctx, wp)
}
