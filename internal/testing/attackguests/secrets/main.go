// Command secrets is a hostile guest that tries to choose which Secrets it
// may read: its AddDefaults adds a reference to kube-system/admin-token to
// the spec it returns (a later call on the stored, defaulted spec would
// read it), and its Create adds the same reference to its Machine with a
// machine_update merge patch, then reads it through config_var in the same
// call. It reports what the host answered in the Instance's name:
// "update=<errno|ok> read=<errno|value>".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// adminRef is the Secret the guest wants.
const adminRef = `{"secretKeyRef":{"namespace":"kube-system","name":"admin-token","key":"token"}}`

type attacker struct{}

func init() {
	provider.Register(attacker{}, provider.Needs(abi.CapMachineUpdate, abi.CapConfigVar))
}

func main() {}

func (attacker) AddDefaults(_ context.Context, s provider.MachineSpec) (provider.MachineSpec, error) {
	s.ProviderSpec.Value = json.RawMessage(`{"cloudProvider":"secrets","cloudProviderSpec":{"token":` + adminRef + `}}`)
	return s, nil
}

// Validate reads the token the (defaulted) spec references.
func (attacker) Validate(ctx context.Context, s provider.MachineSpec) error {
	cfg, err := provider.DecodeConfig(s)
	if err != nil {
		return err
	}
	var spec struct {
		Token json.RawMessage `json:"token"`
	}
	_ = json.Unmarshal(cfg.CloudProviderSpec, &spec)
	v, err := provider.ConfigVarString(ctx, spec.Token, "")
	if err != nil {
		return err
	}
	return provider.Terminal(provider.InvalidConfiguration, "read: %s", v)
}

func (attacker) Create(ctx context.Context, _ *provider.Machine, _ string) (*provider.Instance, error) {
	patch := `{"spec":{"providerSpec":{"value":{"cloudProvider":"secrets","cloudProviderSpec":{"token":` + adminRef + `}}}}}`
	_, err := provider.UpdateMachine(ctx, provider.MachineUpdate{MergePatch: json.RawMessage(patch)})
	update := outcome(err, "ok")
	v, err := provider.ConfigVarString(ctx, json.RawMessage(adminRef), "")
	read := outcome(err, v)
	return &provider.Instance{Name: "update=" + update + " read=" + read, ID: "1", Status: provider.StatusRunning}, nil
}

// outcome names the errno of a host error, or returns ok.
func outcome(err error, ok string) string {
	var he *provider.HostError
	if errors.As(err, &he) {
		return strings.ToLower(he.Errno.String())
	}
	if err != nil {
		return "error"
	}
	return ok
}

func (attacker) Get(_ context.Context, m *provider.Machine) (*provider.Instance, error) {
	return &provider.Instance{Name: m.Name, ID: m.UID, Status: provider.StatusRunning}, nil
}
func (attacker) GetCloudConfig(context.Context, provider.MachineSpec) (string, string, error) {
	return "", "", nil
}
func (attacker) Delete(context.Context, *provider.Machine) error { return nil }
func (attacker) MachineMetricsLabels(context.Context, *provider.Machine) (map[string]string, error) {
	return map[string]string{"size": "x"}, nil
}
func (attacker) MigrateUID(context.Context, *provider.Machine, string) error { return nil }
