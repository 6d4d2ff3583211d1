package controller

import (
	"context"
	"fmt"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/controller/internal/typedclient"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/gentype"
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

// RESTMachineClient is the Machine client against a real API server:
// client-go's generic typed client (gentype, what a generated clientset is
// made of) for cluster.k8s.io/v1alpha1 Machines, one per namespace asked.
type RESTMachineClient struct {
	rc rest.Interface
}

var _ MachineClient = (*RESTMachineClient)(nil)

// NewRESTMachineClient returns a Machine client for cfg (copied, not
// changed).
func NewRESTMachineClient(cfg *rest.Config) (*RESTMachineClient, error) {
	rc, err := typedclient.For(cfg, clusterv1alpha1.SchemeGroupVersion, Codecs)
	if err != nil {
		return nil, fmt.Errorf("machine client: %w", err)
	}
	return &RESTMachineClient{rc: rc}, nil
}

// machines is the typed client for the Machines of namespace ("" for all
// namespaces): a few fields, made per call.
func (c *RESTMachineClient) machines(namespace string) *gentype.ClientWithList[*clusterv1alpha1.Machine, *clusterv1alpha1.MachineList] {
	return gentype.NewClientWithList[*clusterv1alpha1.Machine, *clusterv1alpha1.MachineList]("machines", c.rc, parameterCodec, namespace,
		func() *clusterv1alpha1.Machine { return &clusterv1alpha1.Machine{} },
		func() *clusterv1alpha1.MachineList { return &clusterv1alpha1.MachineList{} })
}

// Get returns the Machine namespace/name from the API server.
func (c *RESTMachineClient) Get(ctx context.Context, namespace, name string) (*clusterv1alpha1.Machine, error) {
	return c.machines(namespace).Get(ctx, name, metav1.GetOptions{})
}

// List lists Machines in namespace ("" for all namespaces).
func (c *RESTMachineClient) List(ctx context.Context, namespace string, opts metav1.ListOptions) (*clusterv1alpha1.MachineList, error) {
	return c.machines(namespace).List(ctx, opts)
}

// Watch watches Machines in namespace ("" for all namespaces).
func (c *RESTMachineClient) Watch(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	return c.machines(namespace).Watch(ctx, opts)
}

// Create creates m.
func (c *RESTMachineClient) Create(ctx context.Context, m *clusterv1alpha1.Machine) (*clusterv1alpha1.Machine, error) {
	return c.machines(m.Namespace).Create(ctx, m, metav1.CreateOptions{})
}

// Update replaces m (spec and metadata; the status subresource ignores
// status here).
func (c *RESTMachineClient) Update(ctx context.Context, m *clusterv1alpha1.Machine) (*clusterv1alpha1.Machine, error) {
	return c.machines(m.Namespace).Update(ctx, m, metav1.UpdateOptions{})
}

// UpdateStatus replaces m's status through the status subresource.
func (c *RESTMachineClient) UpdateStatus(ctx context.Context, m *clusterv1alpha1.Machine) (*clusterv1alpha1.Machine, error) {
	return c.machines(m.Namespace).UpdateStatus(ctx, m, metav1.UpdateOptions{})
}

// Delete deletes namespace/name.
func (c *RESTMachineClient) Delete(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	return c.machines(namespace).Delete(ctx, name, opts)
}
