// Package provider is the one interface every wasmprov provider is called
// through: a module loaded by package runtime, a name in a
// runtime/registry (which follows hot reloads), and a provider compiled into
// the host all implement Interface, and the controllers take it.
//
// Interface covers both of machine-controller's contracts: every method
// has a context (a cancelled call stops the guest) and the call's host
// resources (Data), and Cleanup reports "deletion started, not finished" as
// done == false, as machine-controller's current contract does. The seed's
// cloud.Provider (machine-controller v0.10.x) and the current
// cloudprovider/types.Provider are each one adapter over it, at the edge:
// cloud.SeedProvider and cloudprovider.New.
//
// The package is a leaf: it imports the API types and the instance and
// error contracts, nothing of the host.
package provider

import (
	"context"
	"errors"
	"log/slog"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud/instance"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Interface is a machine provider: machine-controller's methods with a
// context and the call's Data on each. A nil *Data and every zero field of
// one are valid (see Data).
//
// Errors keep machine-controller's semantics: an error wrapping
// cloud/errors.ErrInstanceNotFound means there is no instance, a
// *cloud/errors.TerminalError needs a human, a
// *cloud/errors.RetryableError says when to try again.
type Interface interface {
	// AddDefaults returns spec with the provider's defaults filled in.
	AddDefaults(ctx context.Context, spec clusterv1alpha1.MachineSpec, data *Data) (clusterv1alpha1.MachineSpec, error)
	// Validate checks a Machine's spec; a terminal error when it can never
	// be served.
	Validate(ctx context.Context, spec clusterv1alpha1.MachineSpec, data *Data) error
	// Get returns the Machine's instance, or an error wrapping
	// ErrInstanceNotFound.
	Get(ctx context.Context, machine *clusterv1alpha1.Machine, data *Data) (instance.Instance, error)
	// GetCloudConfig returns the kubelet's cloud-config and the cloud
	// provider's name.
	GetCloudConfig(ctx context.Context, spec clusterv1alpha1.MachineSpec, data *Data) (config, name string, err error)
	// Create creates the Machine's instance with userdata.
	Create(ctx context.Context, machine *clusterv1alpha1.Machine, data *Data, userdata string) (instance.Instance, error)
	// Cleanup deletes the Machine's instance and everything made for it.
	// done is true when everything is gone, false when deletion started
	// and is not finished (call again; Data.Progress hears the provider's
	// note and hint). An instance that is already gone is done.
	Cleanup(ctx context.Context, machine *clusterv1alpha1.Machine, data *Data) (done bool, err error)
	// MachineMetricsLabels returns the labels of the Machine's metrics
	// (with a "size" label), without calling the cloud.
	MachineMetricsLabels(ctx context.Context, machine *clusterv1alpha1.Machine, data *Data) (map[string]string, error)
	// MigrateUID moves what the provider keyed by the Machine's UID to
	// newUID.
	MigrateUID(ctx context.Context, machine *clusterv1alpha1.Machine, newUID types.UID, data *Data) error
	// SetMetricsForMachines hands the provider every Machine it serves,
	// for metrics of its own; it may do nothing.
	SetMetricsForMachines(ctx context.Context, machines clusterv1alpha1.MachineList, data *Data) error
}

// Data is the host side of one call: who persists Machine updates, who
// lists PersistentVolumes, where Secrets and ConfigMaps are read, where
// the call's log lines go. A nil *Data and every zero field are valid;
// what each zero means is on the field.
type Data struct {
	// Update persists a change of the call's Machine (the guest's
	// machine_update). Nil: machine_update answers UNAVAILABLE.
	Update MachineUpdater
	// ListPersistentVolumes serves pv_list. Nil: pv_list answers
	// UNAVAILABLE.
	ListPersistentVolumes PersistentVolumeLister
	// Objects reads the Secret and ConfigMap keys config_var resolves
	// (only those the call's Machine references: the host decides,
	// whoever reads). Nil: the runtime's Kubernetes client, if any; else
	// references are refused as UNAVAILABLE.
	Objects ObjectReader
	// Logger receives the guest's log records of this call and the
	// host's lines about it. Nil: the runtime's logger, with the
	// provider's name and the Machine added. A caller's logger is taken
	// to name the call already, as machine-controller's names the Machine
	// and the provider: the host adds the method only, so no field
	// appears twice on a line.
	Logger *slog.Logger
	// Progress is told, when Cleanup returns done == false, what the
	// provider said: its note and when to call again (0: no hint). Nil:
	// both are dropped.
	Progress func(note string, retryAfter time.Duration)
}

// MachineUpdater persists modify applied to machine and returns the
// Machine as stored.
type MachineUpdater func(machine *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error)

// PersistentVolumeLister lists the PersistentVolumes selector matches.
type PersistentVolumeLister func(ctx context.Context, selector labels.Selector) ([]corev1.PersistentVolume, error)

// FromLister serves ListPersistentVolumes from a lister of pointers, such
// as client-go's PersistentVolumeLister over an informer's cache (which
// needs no context).
func FromLister(l interface {
	List(selector labels.Selector) ([]*corev1.PersistentVolume, error)
}) PersistentVolumeLister {
	return func(_ context.Context, sel labels.Selector) ([]corev1.PersistentVolume, error) {
		pvs, err := l.List(sel)
		if err != nil {
			return nil, err
		}
		out := make([]corev1.PersistentVolume, 0, len(pvs))
		for _, pv := range pvs {
			out = append(out, *pv)
		}
		return out, nil
	}
}

// ObjectReader reads one key of a Secret or ConfigMap. An error wrapping
// ErrKeyNotFound means the object exists without the key; one for which
// k8s.io/apimachinery's IsNotFound holds, that the object does not exist.
type ObjectReader interface {
	SecretKey(ctx context.Context, namespace, name, key string) (string, error)
	ConfigMapKey(ctx context.Context, namespace, name, key string) (string, error)
}

// ErrKeyNotFound is wrapped by an ObjectReader whose object lacks the key
// asked for.
var ErrKeyNotFound = errors.New("key not found")

// ErrProviderNotFound is wrapped by whoever finds providers by name (a
// runtime/registry Registry, the controllers' ProviderSource) when none
// has the name.
var ErrProviderNotFound = errors.New("provider not found")

// ErrDeletionInProgress is "deletion started, not finished: call again"
// as an error, for a contract whose delete has no done result (the seed's
// Delete, see cloud.SeedProvider) and for a provider's raw answer
// (runtime.Provider.Delete). Cleanup reports it as done == false.
var ErrDeletionInProgress = errors.New("deletion in progress")

type machineNamespaceKey struct{}

// WithMachineNamespace tells a provider which namespace the Machine is in
// for the methods that get only its spec (AddDefaults, Validate,
// GetCloudConfig). wasmprov's host decides from it which namespaces'
// Secrets and ConfigMaps the provider may read in those calls, as it does
// from the Machine itself in the others. A controller validating a Machine
// it read from the API server passes that Machine's namespace.
func WithMachineNamespace(ctx context.Context, namespace string) context.Context {
	return context.WithValue(ctx, machineNamespaceKey{}, namespace)
}

// MachineNamespace returns the namespace set by WithMachineNamespace, or "".
func MachineNamespace(ctx context.Context) string {
	ns, _ := ctx.Value(machineNamespaceKey{}).(string)
	return ns
}
