// Package types is machine-controller's current provider contract
// (k8c.io/machine-controller/pkg/cloudprovider/types, imported there as
// cloudprovidertypes) spelled on wasmprov's Machine types: the Provider
// interface with a context and a zap logger, ProviderData with a
// controller-runtime client, and the variadic MachineUpdater.
//
// The seed's contract, machine-controller v0.10.x's, is package cloud; a
// wasm provider serves both (package cloudprovider adapts it to this one).
package types

import (
	"context"
	"fmt"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud/instance"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// Provider is machine-controller's cloud provider interface as of its
// current release.
type Provider interface {
	// AddDefaults reads the MachineSpec and applies defaults for
	// provider-specific fields.
	AddDefaults(log *zap.SugaredLogger, spec clusterv1alpha1.MachineSpec) (clusterv1alpha1.MachineSpec, error)

	// Validate validates the given machine's specification. In case of
	// any error a "terminal" error should be set.
	Validate(ctx context.Context, log *zap.SugaredLogger, machinespec clusterv1alpha1.MachineSpec) error

	// Get gets the instance associated with the machine. It may return a
	// terminal error; errors.ErrInstanceNotFound when there is none.
	Get(ctx context.Context, log *zap.SugaredLogger, machine *clusterv1alpha1.Machine, data *ProviderData) (instance.Instance, error)

	// Create creates a cloud instance according to the given machine.
	Create(ctx context.Context, log *zap.SugaredLogger, machine *clusterv1alpha1.Machine, data *ProviderData, userdata string) (instance.Instance, error)

	// Cleanup deletes the instance and everything associated with it. It
	// returns true when everything is gone, false when deletion is
	// asynchronous and not done yet: the controller calls it again later.
	Cleanup(ctx context.Context, log *zap.SugaredLogger, machine *clusterv1alpha1.Machine, data *ProviderData) (bool, error)

	// MachineMetricsLabels returns labels for the Prometheus metrics about
	// created machines (instance type, size, region, …), without cloud API
	// calls. It should always return a "size" label.
	MachineMetricsLabels(machine *clusterv1alpha1.Machine) (map[string]string, error)

	// MigrateUID is called when the UID of the Machine object changes;
	// providers that identify resources by Machine.UID must implement it.
	MigrateUID(ctx context.Context, log *zap.SugaredLogger, machine *clusterv1alpha1.Machine, newUID types.UID) error

	// SetMetricsForMachines lets the provider report metrics of its own
	// about the given Machines; it may be a no-op.
	SetMetricsForMachines(machines clusterv1alpha1.MachineList) error
}

// MachineModifier changes a Machine in place.
type MachineModifier func(*clusterv1alpha1.Machine)

// MachineUpdater fetches the Machine afresh, applies the modifiers and
// updates it, retrying on conflicts; on return machine holds the stored
// object.
type MachineUpdater func(machine *clusterv1alpha1.Machine, modifiers ...MachineModifier) error

// ProviderData is what a provider gets beside the Machine.
type ProviderData struct {
	Ctx    context.Context
	Update MachineUpdater
	Client ctrlruntimeclient.Client
}

// GetMachineUpdater returns a MachineUpdater over client: Get, apply the
// modifiers, Update only if something changed, retry on conflict with
// client-go's default backoff.
func GetMachineUpdater(ctx context.Context, client ctrlruntimeclient.Client) MachineUpdater {
	return func(machine *clusterv1alpha1.Machine, modifiers ...MachineModifier) error {
		if len(modifiers) == 0 {
			return nil
		}
		// The name is kept apart: a failed Get may leave machine empty.
		key := types.NamespacedName{Namespace: machine.Namespace, Name: machine.Name}
		return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			if err := client.Get(ctx, key, machine); err != nil {
				return fmt.Errorf("failed to get machine %s: %w", key, err)
			}
			before := machine.DeepCopy()
			for _, modify := range modifiers {
				modify(machine)
			}
			if equality.Semantic.DeepEqual(before, machine) {
				return nil
			}
			return client.Update(ctx, machine)
		})
	}
}
