package controller

import (
	"context"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/controller/internal/kubeclient"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Scheme knows this module's API groups, cluster.k8s.io/v1alpha1,
// wasmprov.io/v1alpha1 and infrastructure.wasmprov.io/v1alpha1 (and
// core/v1): what an event recorder for Machines, WasmProviders and
// WasmMachines needs, and the manager's client and cache.
var Scheme = kubeclient.Scheme

// RESTMachineClient is the Machine client against a real API server
// (controller-runtime's uncached client, typed for Machines). Besides
// MachineClient it has Create and Delete.
type RESTMachineClient struct {
	kubeclient.Typed[clusterv1alpha1.Machine, *clusterv1alpha1.Machine, clusterv1alpha1.MachineList, *clusterv1alpha1.MachineList]
}

var _ MachineClient = (*RESTMachineClient)(nil)

// NewRESTMachineClient returns a Machine client for cfg (copied, not
// changed).
func NewRESTMachineClient(cfg *rest.Config) (*RESTMachineClient, error) {
	c, err := kubeclient.New(cfg)
	if err != nil {
		return nil, err
	}
	return &RESTMachineClient{kubeclient.For[clusterv1alpha1.Machine, *clusterv1alpha1.Machine, clusterv1alpha1.MachineList, *clusterv1alpha1.MachineList](c)}, nil
}
