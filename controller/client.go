package controller

import (
	"context"
	"fmt"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// MachineClient is what the controller needs from the API server for
// Machines. RESTMachineClient implements it against a real API server; tests
// use an in-memory one.
type MachineClient interface {
	Get(ctx context.Context, namespace, name string) (*clusterv1alpha1.Machine, error)
	List(ctx context.Context, namespace string, opts metav1.ListOptions) (*clusterv1alpha1.MachineList, error)
	Watch(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error)
	Update(ctx context.Context, m *clusterv1alpha1.Machine) (*clusterv1alpha1.Machine, error)
	UpdateStatus(ctx context.Context, m *clusterv1alpha1.Machine) (*clusterv1alpha1.Machine, error)
}

// Scheme knows the cluster.k8s.io/v1alpha1 types (and meta/v1's options).
var Scheme = runtime.NewScheme()

// Codecs encode and decode the types of Scheme.
var Codecs = serializer.NewCodecFactory(Scheme)

var parameterCodec = runtime.NewParameterCodec(Scheme)

func init() {
	if err := clusterv1alpha1.AddToScheme(Scheme); err != nil {
		panic(err)
	}
	metav1.AddToGroupVersion(Scheme, metav1.SchemeGroupVersion)
}

// RESTMachineClient is a small typed client for cluster.k8s.io/v1alpha1
// Machines, built on client-go's rest package (there is no generated
// clientset for these types in this module).
type RESTMachineClient struct {
	rc rest.Interface
}

var _ MachineClient = (*RESTMachineClient)(nil)

// NewRESTMachineClient returns a Machine client for cfg. cfg is copied; its
// group version, API path and serializer are set for cluster.k8s.io/v1alpha1.
func NewRESTMachineClient(cfg *rest.Config) (*RESTMachineClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &clusterv1alpha1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = Codecs.WithoutConversion()
	c.ContentType = runtime.ContentTypeJSON
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("machine REST client: %w", err)
	}
	return &RESTMachineClient{rc: rc}, nil
}

const resource = "machines"

// Get returns the Machine namespace/name from the API server.
func (c *RESTMachineClient) Get(ctx context.Context, namespace, name string) (*clusterv1alpha1.Machine, error) {
	out := &clusterv1alpha1.Machine{}
	err := c.rc.Get().Namespace(namespace).Resource(resource).Name(name).Do(ctx).Into(out)
	return out, err
}

// List lists Machines in namespace ("" for all namespaces).
func (c *RESTMachineClient) List(ctx context.Context, namespace string, opts metav1.ListOptions) (*clusterv1alpha1.MachineList, error) {
	out := &clusterv1alpha1.MachineList{}
	req := c.rc.Get().Namespace(namespace).Resource(resource).VersionedParams(&opts, parameterCodec)
	if opts.TimeoutSeconds != nil {
		req = req.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second)
	}
	err := req.Do(ctx).Into(out)
	return out, err
}

// Watch watches Machines in namespace ("" for all namespaces).
func (c *RESTMachineClient) Watch(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	req := c.rc.Get().Namespace(namespace).Resource(resource).VersionedParams(&opts, parameterCodec)
	if opts.TimeoutSeconds != nil {
		req = req.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second)
	}
	return req.Watch(ctx)
}

// Create creates m.
func (c *RESTMachineClient) Create(ctx context.Context, m *clusterv1alpha1.Machine) (*clusterv1alpha1.Machine, error) {
	out := &clusterv1alpha1.Machine{}
	err := c.rc.Post().Namespace(m.Namespace).Resource(resource).Body(m).Do(ctx).Into(out)
	return out, err
}

// Update replaces m (spec and metadata; the status subresource ignores
// status here).
func (c *RESTMachineClient) Update(ctx context.Context, m *clusterv1alpha1.Machine) (*clusterv1alpha1.Machine, error) {
	out := &clusterv1alpha1.Machine{}
	err := c.rc.Put().Namespace(m.Namespace).Resource(resource).Name(m.Name).Body(m).Do(ctx).Into(out)
	return out, err
}

// UpdateStatus replaces m's status through the status subresource.
func (c *RESTMachineClient) UpdateStatus(ctx context.Context, m *clusterv1alpha1.Machine) (*clusterv1alpha1.Machine, error) {
	out := &clusterv1alpha1.Machine{}
	err := c.rc.Put().Namespace(m.Namespace).Resource(resource).Name(m.Name).SubResource("status").Body(m).Do(ctx).Into(out)
	return out, err
}

// Delete deletes namespace/name.
func (c *RESTMachineClient) Delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	return c.rc.Delete().Namespace(namespace).Resource(resource).Name(name).Body(&opts).Do(ctx).Error()
}
