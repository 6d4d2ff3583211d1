package runtime

import (
	"context"
	"log/slog"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/internal/hostfuncs"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// Calls is a provider's methods in the shape both of machine-controller's
// contracts are built from: a context and the call's host resources on
// every method, and Cleanup's "started, not finished" as a result rather
// than an error. The seed's cloud.Provider (Provider's own methods,
// ContextProvider) and machine-controller's current contract (package
// cloudprovider) are adapters over it, so both views of a module share its
// pool, its policy and its metrics.
//
// Provider.Calls and registry.Handle.Calls return one.
type Calls interface {
	AddDefaults(ctx context.Context, spec clusterv1alpha1.MachineSpec, data *CallData) (clusterv1alpha1.MachineSpec, error)
	Validate(ctx context.Context, spec clusterv1alpha1.MachineSpec, data *CallData) error
	Get(ctx context.Context, machine *clusterv1alpha1.Machine, data *CallData) (instance.Instance, error)
	GetCloudConfig(ctx context.Context, spec clusterv1alpha1.MachineSpec, data *CallData) (config, name string, err error)
	Create(ctx context.Context, machine *clusterv1alpha1.Machine, data *CallData, userdata string) (instance.Instance, error)
	// Cleanup runs the module's Delete. done is true when everything is
	// gone (the guest returned OK), false when the guest reported
	// IN_PROGRESS: deletion started, call again. Any other answer is the
	// error, as the guest gave it: NOT_FOUND from Delete (the SPEC asks for
	// OK) stays ErrInstanceNotFound here, so a checker sees it; the current
	// contract's adapter (package cloudprovider) reads it as done.
	Cleanup(ctx context.Context, machine *clusterv1alpha1.Machine, data *CallData) (done bool, err error)
	MachineMetricsLabels(ctx context.Context, machine *clusterv1alpha1.Machine, data *CallData) (map[string]string, error)
	MigrateUID(ctx context.Context, machine *clusterv1alpha1.Machine, newUID types.UID, data *CallData) error
	// SetMetricsForMachines hands the module every Machine it serves and
	// replaces the provider's metric samples with its answer (see
	// Provider.MetricSamples). A module without the optional export
	// reports none: nil error, no samples.
	SetMetricsForMachines(ctx context.Context, machines clusterv1alpha1.MachineList, data *CallData) error
}

// CallData is the host side of one call: who persists Machine updates,
// who lists PersistentVolumes, where config_var reads Secrets and
// ConfigMaps, and where the call's log lines go. A nil *CallData and every
// zero field are valid; what each zero means is on the field.
type CallData struct {
	// Update persists a change of the call's Machine for machine_update
	// and returns the Machine as stored. Nil: machine_update answers
	// UNAVAILABLE.
	Update cloud.MachineUpdater
	// ListPersistentVolumes serves pv_list. Nil: pv_list answers
	// UNAVAILABLE.
	ListPersistentVolumes func(ctx context.Context, selector labels.Selector) ([]corev1.PersistentVolume, error)
	// Objects reads the Secret and ConfigMap keys config_var resolves
	// (only those the caller's Machine references: the host decides,
	// whoever reads). Nil: the runtime's WithKubernetesClient client;
	// without one, references are refused as UNAVAILABLE.
	Objects ObjectReader
	// Logger receives the guest's log records of this call and the host's
	// lines about it, with the provider, method and machine attributes
	// added. Nil: the runtime's logger.
	Logger *slog.Logger
	// Progress is told, when Cleanup returns false, what the module said
	// with its IN_PROGRESS answer: its note and when to call again (0 when
	// it gave no hint). machine-controller's Cleanup has no place for
	// either; a controller that can use the hint sets this. Nil: both are
	// dropped.
	Progress func(note string, retryAfter time.Duration)
}

// ObjectReader reads one key of a Secret or ConfigMap. An error wrapping
// ErrKeyNotFound means the object exists without the key.
type ObjectReader interface {
	SecretKey(ctx context.Context, namespace, name, key string) (string, error)
	ConfigMapKey(ctx context.Context, namespace, name, key string) (string, error)
}

// ErrKeyNotFound is wrapped by an ObjectReader whose object lacks the key
// asked for; config_var then answers NOT_FOUND instead of FAILED.
var ErrKeyNotFound = hostfuncs.ErrKeyNotFound

// SeedData returns the CallData of the seed interface's
// MachineCreateDeleteData: its updater and its PV lister. A nil data gives
// nil.
func SeedData(data *cloud.MachineCreateDeleteData) *CallData {
	if data == nil {
		return nil
	}
	out := &CallData{Update: data.Updater}
	if l := data.PVLister; l != nil {
		out.ListPersistentVolumes = func(_ context.Context, sel labels.Selector) ([]corev1.PersistentVolume, error) {
			pvs, err := l.List(sel)
			if err != nil {
				return nil, err
			}
			list := make([]corev1.PersistentVolume, 0, len(pvs))
			for _, pv := range pvs {
				list = append(list, *pv)
			}
			return list, nil
		}
	}
	return out
}

// hostData is the hostfuncs form of d.
func (d *CallData) hostData() *hostfuncs.Data {
	if d == nil {
		return nil
	}
	return &hostfuncs.Data{Update: d.Update, ListPVs: d.ListPersistentVolumes, Objects: d.Objects, Logger: d.Logger}
}
