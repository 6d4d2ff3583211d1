// Command wasmprov is benchprov as a wasmprov guest, written with the Go
// guest SDK like any provider:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o benchprov.wasm .
//
// Its HTTP client is the SDK's hosthttp (http_do_bin); built with
// -tags benchjsonhttp it is a copy of the pre-http_do_bin hosthttp, JSON
// through http_do, the A side of BenchmarkCreateHTTPFraming.
//
// GetCloudConfig is the "empty" call: it does nothing beyond what the SDK
// does for every call.
package main

import (
	"context"
	"errors"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/bench/benchprov"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

type benchProvider struct{}

func init() { provider.Register(benchProvider{}, provider.Needs(abi.CapHTTP)) }

func main() {}

func terminal(err error) error {
	if errors.Is(err, benchprov.ErrInvalid) {
		return provider.Terminal(provider.InvalidConfiguration, "%v", err)
	}
	return err
}

func (benchProvider) AddDefaults(_ context.Context, s provider.MachineSpec) (provider.MachineSpec, error) {
	return s, nil
}

func (benchProvider) Validate(_ context.Context, s provider.MachineSpec) error {
	return terminal(benchprov.Validate(s.ProviderSpec.Value))
}

func (benchProvider) Get(_ context.Context, m *provider.Machine) (*provider.Instance, error) {
	return nil, provider.ErrInstanceNotFound
}

func (benchProvider) GetCloudConfig(context.Context, provider.MachineSpec) (string, string, error) {
	return "", "", nil
}

func (benchProvider) Create(ctx context.Context, m *provider.Machine, _ string) (*provider.Instance, error) {
	inst, err := benchprov.Create(ctx, httpClient(), m.Name, m.UID, m.Spec.ProviderSpec.Value)
	if err != nil {
		return nil, terminal(err)
	}
	return &provider.Instance{Name: inst.Name, ID: inst.ID, ProviderID: inst.ProviderID,
		Addresses: inst.Addresses, Status: provider.InstanceStatus(inst.Status)}, nil
}

func (benchProvider) Delete(context.Context, *provider.Machine) error { return nil }

func (benchProvider) MachineMetricsLabels(context.Context, *provider.Machine) (map[string]string, error) {
	return map[string]string{"size": "cx32"}, nil
}

func (benchProvider) MigrateUID(context.Context, *provider.Machine, string) error { return nil }
