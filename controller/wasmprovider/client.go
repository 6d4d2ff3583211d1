package wasmprovider

import (
	"context"
	"fmt"
	"time"

	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
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

// RESTClient is a small typed client for the cluster-scoped
// wasmprov.io/v1alpha1 WasmProviders, on client-go's rest package (there
// is no generated clientset for them).
type RESTClient struct {
	rc rest.Interface
}

var _ Client = (*RESTClient)(nil)

// NewRESTClient returns a WasmProvider client for cfg. cfg is copied; its
// group version, API path and serializer are set for wasmprov.io/v1alpha1.
func NewRESTClient(cfg *rest.Config) (*RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &wasmprovv1alpha1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = Codecs.WithoutConversion()
	c.ContentType = runtime.ContentTypeJSON
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("wasmprovider REST client: %w", err)
	}
	return &RESTClient{rc: rc}, nil
}

// Get returns the WasmProvider name.
func (c *RESTClient) Get(ctx context.Context, name string) (*wasmprovv1alpha1.WasmProvider, error) {
	out := &wasmprovv1alpha1.WasmProvider{}
	err := c.rc.Get().Resource(wasmprovv1alpha1.Resource).Name(name).Do(ctx).Into(out)
	return out, err
}

// List lists WasmProviders.
func (c *RESTClient) List(ctx context.Context, opts metav1.ListOptions) (*wasmprovv1alpha1.WasmProviderList, error) {
	out := &wasmprovv1alpha1.WasmProviderList{}
	req := c.rc.Get().Resource(wasmprovv1alpha1.Resource).VersionedParams(&opts, parameterCodec)
	if opts.TimeoutSeconds != nil {
		req = req.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second)
	}
	err := req.Do(ctx).Into(out)
	return out, err
}

// Watch watches WasmProviders.
func (c *RESTClient) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	req := c.rc.Get().Resource(wasmprovv1alpha1.Resource).VersionedParams(&opts, parameterCodec)
	if opts.TimeoutSeconds != nil {
		req = req.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second)
	}
	return req.Watch(ctx)
}

// UpdateStatus replaces wp's status through the status subresource (the
// API server ignores the spec there, and refuses a stale resourceVersion
// with a conflict).
func (c *RESTClient) UpdateStatus(ctx context.Context, wp *wasmprovv1alpha1.WasmProvider) (*wasmprovv1alpha1.WasmProvider, error) {
	out := &wasmprovv1alpha1.WasmProvider{}
	err := c.rc.Put().Resource(wasmprovv1alpha1.Resource).Name(wp.Name).SubResource("status").Body(wp).Do(ctx).Into(out)
	return out, err
}
