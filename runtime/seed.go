package runtime

import (
	"context"
	"time"

	"github.com/wasmprov/wasmprov/abi"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/cloud/instance"

	"k8s.io/apimachinery/pkg/types"
)

// SeedProvider returns c as the seed's contract with a context on every
// method (cloud.ContextProvider; cloud.WithoutContext over it is
// cloud.Provider). Create and Delete take their updater and PV lister from
// MachineCreateDeleteData; the other methods get no call data, as the seed
// interface gives them none.
//
// Delete is Cleanup: a module reporting IN_PROGRESS makes Delete return a
// retriable *CallError wrapping ErrDeletionInProgress (a RetryableError
// when the module gave a hint), as a seed-era provider whose deletion is
// not finished would, and the caller calls Delete again.
func SeedProvider(c Calls) cloud.ContextProvider { return seedProvider{c} }

type seedProvider struct{ c Calls }

var _ cloud.ContextProvider = seedProvider{}

func (s seedProvider) AddDefaults(ctx context.Context, spec clusterv1alpha1.MachineSpec) (clusterv1alpha1.MachineSpec, error) {
	return s.c.AddDefaults(ctx, spec, nil)
}

func (s seedProvider) Validate(ctx context.Context, spec clusterv1alpha1.MachineSpec) error {
	return s.c.Validate(ctx, spec, nil)
}

func (s seedProvider) Get(ctx context.Context, machine *clusterv1alpha1.Machine) (instance.Instance, error) {
	return s.c.Get(ctx, machine, nil)
}

func (s seedProvider) GetCloudConfig(ctx context.Context, spec clusterv1alpha1.MachineSpec) (string, string, error) {
	return s.c.GetCloudConfig(ctx, spec, nil)
}

func (s seedProvider) Create(ctx context.Context, machine *clusterv1alpha1.Machine, data *cloud.MachineCreateDeleteData, userdata string) (instance.Instance, error) {
	return s.c.Create(ctx, machine, SeedData(data), userdata)
}

func (s seedProvider) Delete(ctx context.Context, machine *clusterv1alpha1.Machine, data *cloud.MachineCreateDeleteData) error {
	d := SeedData(data)
	if d == nil {
		d = &CallData{}
	}
	var note string
	var retryAfter time.Duration
	d.Progress = func(n string, r time.Duration) { note, retryAfter = n, r }
	done, err := s.c.Cleanup(ctx, machine, d)
	if err != nil || done {
		return err
	}
	// Deletion started and is not finished: for the seed's caller, a
	// retriable error carrying the module's note and hint.
	err = &progressError{note: note}
	if retryAfter > 0 {
		err = &cloudprovidererrors.RetryableError{RetryAfter: retryAfter, Err: err}
	}
	return &CallError{Provider: providerName(s.c), Method: abi.MethodDelete, Class: ClassTransient, Err: err}
}

func (s seedProvider) MachineMetricsLabels(ctx context.Context, machine *clusterv1alpha1.Machine) (map[string]string, error) {
	return s.c.MachineMetricsLabels(ctx, machine, nil)
}

func (s seedProvider) MigrateUID(ctx context.Context, machine *clusterv1alpha1.Machine, newUID types.UID) error {
	return s.c.MigrateUID(ctx, machine, newUID, nil)
}

// providerName names the provider behind c in errors, when c says.
func providerName(c Calls) string {
	if n, ok := c.(interface{ Name() string }); ok {
		return n.Name()
	}
	return ""
}
