// Command panicky is a test guest that panics in every method, each time in
// a different way a Go provider can: a panic value, a nil map write, an
// index out of range, a nil pointer dereference.
package main

import (
	"context"

	"github.com/wasmprov/wasmprov/guests/go/provider"
)

type panicky struct{}

func init() { provider.Register(panicky{}) }

func main() {}

var (
	nilMap map[string]int
	index  = 3
	nilPtr *provider.Machine
)

func (panicky) AddDefaults(context.Context, provider.MachineSpec) (provider.MachineSpec, error) {
	panic("AddDefaults exploded")
}

func (panicky) Validate(context.Context, provider.MachineSpec) error {
	nilMap["x"] = 1
	return nil
}

func (panicky) Get(context.Context, *provider.Machine) (*provider.Instance, error) {
	s := []int{1, 2}
	_ = s[index]
	return nil, nil
}

func (panicky) GetCloudConfig(context.Context, provider.MachineSpec) (string, string, error) {
	return nilPtr.Name, "", nil
}

func (panicky) Create(context.Context, *provider.Machine, string) (*provider.Instance, error) {
	panic(struct{ Code int }{42})
}

func (panicky) Delete(context.Context, *provider.Machine) error { panic("Delete exploded") }

func (panicky) MachineMetricsLabels(context.Context, *provider.Machine) (map[string]string, error) {
	panic("MachineMetricsLabels exploded")
}

func (panicky) MigrateUID(context.Context, *provider.Machine, string) error {
	panic("MigrateUID exploded")
}
