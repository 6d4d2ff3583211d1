// Package fakeprovider is machine-controller's fake cloud provider written
// against the wasmprov Go guest SDK. Its cloudProviderSpec is
// {"passValidation": bool}: Validate fails unless passValidation is true, as
// upstream. Every other method succeeds without touching any cloud.
//
// Upstream's fake returns an empty instance and no metric labels; this one
// reports the Machine's name and UID and a "size" label, which changes no
// controller decision but makes the demo and the tests show that data really
// crossed the boundary.
package fakeprovider

import (
	"context"
	"errors"

	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// CloudProviderSpec is the fake provider's configuration.
type CloudProviderSpec struct {
	PassValidation bool `json:"passValidation"`
}

// Provider is the fake provider.
type Provider struct{}

func spec(s provider.MachineSpec) (CloudProviderSpec, error) {
	var cfg CloudProviderSpec
	c, err := provider.DecodeConfig(s)
	if err != nil {
		return cfg, err
	}
	// DecodeFields reads the one member the fake needs without reflection.
	if err := provider.DecodeFields(c.CloudProviderSpec, provider.Fields{"passValidation": &cfg.PassValidation}); err != nil {
		return cfg, provider.Terminal(provider.InvalidConfiguration, "failed to decode cloudProviderSpec: %v", err)
	}
	return cfg, nil
}

// AddDefaults returns the spec unchanged: the fake has no defaults.
func (Provider) AddDefaults(_ context.Context, s provider.MachineSpec) (provider.MachineSpec, error) {
	return s, nil
}

// Validate passes only when passValidation is true.
func (Provider) Validate(ctx context.Context, s provider.MachineSpec) error {
	cfg, err := spec(s)
	if err != nil {
		return err
	}
	if cfg.PassValidation {
		provider.Logger(ctx).Debug("succeeding validation as requested")
		return nil
	}
	provider.Logger(ctx).Debug("failing validation as requested")
	return errors.New("failing validation as requested")
}

func instance(m *provider.Machine) *provider.Instance {
	return &provider.Instance{
		Name:       m.Name,
		ID:         m.UID,
		ProviderID: "fake://" + m.UID,
		Status:     provider.StatusRunning,
	}
}

// Get reports an instance for every Machine.
func (Provider) Get(_ context.Context, m *provider.Machine) (*provider.Instance, error) {
	return instance(m), nil
}

// GetCloudConfig returns no cloud config.
func (Provider) GetCloudConfig(context.Context, provider.MachineSpec) (string, string, error) {
	return "", "", nil
}

// Create pretends to create an instance.
func (Provider) Create(_ context.Context, m *provider.Machine, _ string) (*provider.Instance, error) {
	return instance(m), nil
}

// Delete has nothing to delete.
func (Provider) Delete(context.Context, *provider.Machine) error { return nil }

// MachineMetricsLabels reports the fake size.
func (Provider) MachineMetricsLabels(context.Context, *provider.Machine) (map[string]string, error) {
	return map[string]string{"size": "fake"}, nil
}

// MigrateUID has nothing to migrate.
func (Provider) MigrateUID(context.Context, *provider.Machine, string) error { return nil }
