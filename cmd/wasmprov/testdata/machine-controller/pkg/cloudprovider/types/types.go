// Package types is the contract between the controller and a provider.
package types

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"k8c.io/machine-controller/pkg/cloudprovider/instance"
	clusterv1alpha1 "k8c.io/machine-controller/sdk/apis/cluster/v1alpha1"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// Provider is a cloud provider.
type Provider interface {
	AddDefaults(log *zap.SugaredLogger, spec clusterv1alpha1.MachineSpec) (clusterv1alpha1.MachineSpec, error)
	Validate(ctx context.Context, log *zap.SugaredLogger, machinespec clusterv1alpha1.MachineSpec) error
	Get(ctx context.Context, log *zap.SugaredLogger, machine *clusterv1alpha1.Machine, data *ProviderData) (instance.Instance, error)
	Create(ctx context.Context, log *zap.SugaredLogger, machine *clusterv1alpha1.Machine, data *ProviderData, userdata string) (instance.Instance, error)
	Cleanup(ctx context.Context, log *zap.SugaredLogger, machine *clusterv1alpha1.Machine, data *ProviderData) (bool, error)
	MachineMetricsLabels(machine *clusterv1alpha1.Machine) (map[string]string, error)
	MigrateUID(ctx context.Context, log *zap.SugaredLogger, machine *clusterv1alpha1.Machine, newUID types.UID) error
	SetMetricsForMachines(machines clusterv1alpha1.MachineList) error
}

// MachineModifier changes a Machine in place.
type MachineModifier func(*clusterv1alpha1.Machine)

// MachineUpdater persists modifications of a Machine.
type MachineUpdater func(*clusterv1alpha1.Machine, ...MachineModifier) error

// ProviderData is what a provider gets beside the Machine.
type ProviderData struct {
	Ctx    context.Context
	Update MachineUpdater
	Client ctrlruntimeclient.Client
}

// GetMachineUpdater re-reads the Machine, applies the modifiers and writes
// it if anything changed, retrying on conflicts; machine ends as stored.
func GetMachineUpdater(ctx context.Context, client ctrlruntimeclient.Client) MachineUpdater {
	return func(machine *clusterv1alpha1.Machine, modifiers ...MachineModifier) error {
		if len(modifiers) == 0 {
			return nil
		}
		key := types.NamespacedName{Namespace: machine.Namespace, Name: machine.Name}
		return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
			if err := client.Get(ctx, key, machine); err != nil {
				return fmt.Errorf("getting machine %s: %w", key, err)
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
