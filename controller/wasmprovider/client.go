package wasmprovider

import (
	"context"
	"fmt"

	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/controller/internal/typedclient"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/gentype"
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

// Scheme knows the wasmprov.io/v1alpha1 types (and meta/v1's options); the
// REST client decodes with it and the default event recorder finds a
// WasmProvider's kind in it.
var Scheme = runtime.NewScheme()

// Codecs encode and decode the types of Scheme.
var Codecs = serializer.NewCodecFactory(Scheme)

var parameterCodec = runtime.NewParameterCodec(Scheme)

func init() {
	// Both only add types to a new scheme; an error here is a programming
	// error in the types package, caught by every test.
	if err := wasmprovv1alpha1.AddToScheme(Scheme); err != nil {
		panic(err)
	}
	metav1.AddToGroupVersion(Scheme, metav1.SchemeGroupVersion)
}

// RESTClient is the WasmProvider client against a real API server:
// client-go's generic typed client (gentype, what a generated clientset is
// made of) for the cluster-scoped wasmprov.io/v1alpha1 WasmProviders.
type RESTClient struct {
	c *gentype.ClientWithList[*wasmprovv1alpha1.WasmProvider, *wasmprovv1alpha1.WasmProviderList]
}

var _ Client = (*RESTClient)(nil)

// NewRESTClient returns a WasmProvider client for cfg (copied, not
// changed).
func NewRESTClient(cfg *rest.Config) (*RESTClient, error) {
	rc, err := typedclient.For(cfg, wasmprovv1alpha1.SchemeGroupVersion, Codecs)
	if err != nil {
		return nil, fmt.Errorf("wasmprovider client: %w", err)
	}
	return &RESTClient{c: gentype.NewClientWithList[*wasmprovv1alpha1.WasmProvider, *wasmprovv1alpha1.WasmProviderList](
		wasmprovv1alpha1.Resource, rc, parameterCodec, "", // cluster scoped
		func() *wasmprovv1alpha1.WasmProvider { return &wasmprovv1alpha1.WasmProvider{} },
		func() *wasmprovv1alpha1.WasmProviderList { return &wasmprovv1alpha1.WasmProviderList{} })}, nil
}

// Get returns the WasmProvider name.
func (c *RESTClient) Get(ctx context.Context, name string) (*wasmprovv1alpha1.WasmProvider, error) {
	return c.c.Get(ctx, name, metav1.GetOptions{})
}

// List lists WasmProviders.
func (c *RESTClient) List(ctx context.Context, opts metav1.ListOptions) (*wasmprovv1alpha1.WasmProviderList, error) {
	return c.c.List(ctx, opts)
}

// Watch watches WasmProviders.
func (c *RESTClient) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return c.c.Watch(ctx, opts)
}

// UpdateStatus replaces wp's status through the status subresource (the
// API server ignores the spec there, and refuses a stale resourceVersion
// with a conflict).
func (c *RESTClient) UpdateStatus(ctx context.Context, wp *wasmprovv1alpha1.WasmProvider) (*wasmprovv1alpha1.WasmProvider, error) {
	return c.c.UpdateStatus(ctx, wp, metav1.UpdateOptions{})
}
