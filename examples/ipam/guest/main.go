//go:build wasip1

// Command guest is a provider that gets its Machines' addresses from the
// embedder's IP allocator (package ipam) through custom host functions.
// Its cloudProviderSpec is {"allocations": N}: Create asks for the address
// N times (default 1), which the tests use to reach the per-call cap.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o guest.wasm .
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// The allocator's functions, imported under the embedder's module name.
// Importing them is the module's declaration that it needs their
// capability, ipam.example.com/addresses.

//go:wasmimport example_ipam_v1 allocate
func ipamAllocate(req unsafe.Pointer, reqLen int32, buf unsafe.Pointer, limit int32) int64

//go:wasmimport example_ipam_v1 lookup
func ipamLookup(req unsafe.Pointer, reqLen int32, buf unsafe.Pointer, limit int32) int64

//go:wasmimport example_ipam_v1 release
func ipamRelease(req unsafe.Pointer, reqLen int32, buf unsafe.Pointer, limit int32) int64

func init() { provider.Register(ipamProvider{}) }

func main() {}

type ipamProvider struct{}

type spec struct {
	Allocations int `json:"allocations"`
}

func decode(s provider.MachineSpec) (spec, error) {
	c, err := provider.DecodeConfig(s)
	if err != nil {
		return spec{}, err
	}
	out := spec{Allocations: 1}
	if len(c.CloudProviderSpec) > 0 {
		if err := json.Unmarshal(c.CloudProviderSpec, &out); err != nil {
			return spec{}, provider.Terminal(provider.InvalidConfiguration, "cloudProviderSpec: %v", err)
		}
	}
	return out, nil
}

func instance(m *provider.Machine, result []byte) (*provider.Instance, error) {
	var r struct {
		Address string `json:"address"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return nil, fmt.Errorf("the allocator's answer: %w", err)
	}
	return &provider.Instance{
		Name: m.Name, ID: m.UID, ProviderID: "ipam://" + m.UID,
		Addresses: map[string]string{r.Address: "InternalIP"},
		Status:    provider.StatusRunning,
	}, nil
}

func (ipamProvider) AddDefaults(_ context.Context, s provider.MachineSpec) (provider.MachineSpec, error) {
	return s, nil
}

func (ipamProvider) Validate(_ context.Context, s provider.MachineSpec) error {
	_, err := decode(s)
	return err
}

func (ipamProvider) Get(_ context.Context, m *provider.Machine) (*provider.Instance, error) {
	b, err := provider.CallHost("lookup", ipamLookup, nil)
	var he *provider.HostError
	if errors.As(err, &he) && he.Errno == abi.ErrnoNotFound {
		return nil, provider.ErrInstanceNotFound
	}
	if err != nil {
		return nil, err
	}
	return instance(m, b)
}

func (ipamProvider) GetCloudConfig(context.Context, provider.MachineSpec) (string, string, error) {
	return "", "", nil
}

func (ipamProvider) Create(_ context.Context, m *provider.Machine, _ string) (*provider.Instance, error) {
	s, err := decode(m.Spec)
	if err != nil {
		return nil, err
	}
	var b []byte
	for i := range s.Allocations {
		if b, err = provider.CallHost("allocate", ipamAllocate, nil); err != nil {
			return nil, fmt.Errorf("allocation %d: %w", i+1, err)
		}
	}
	return instance(m, b)
}

func (ipamProvider) Delete(context.Context, *provider.Machine) error {
	_, err := provider.CallHost("release", ipamRelease, nil)
	return err
}

func (ipamProvider) MachineMetricsLabels(context.Context, *provider.Machine) (map[string]string, error) {
	return map[string]string{"size": "ipam"}, nil
}

func (ipamProvider) MigrateUID(context.Context, *provider.Machine, string) error { return nil }
