// Command panics is a hostile guest whose methods crash the Go runtime in
// the ways a buggy or malicious provider can:
//
//   - Get panics (recovered by the SDK: StatusPanic);
//   - Delete dereferences a nil pointer (a runtime panic, also recovered);
//   - MigrateUID panics on another goroutine, which no recover can catch:
//     the Go runtime exits the module with code 2;
//   - Create allocates 1 GiB in one make, beyond the instance's memory
//     limit: the Go runtime dies with "out of memory";
//   - every other method behaves, so the instance is otherwise valid.
package main

import (
	"context"

	"github.com/wasmprov/wasmprov/guests/go/provider"
)

type attacker struct{}

func init() { provider.Register(attacker{}) }

func main() {}

type node struct{ next *node }

var sink []byte

func (attacker) AddDefaults(_ context.Context, s provider.MachineSpec) (provider.MachineSpec, error) {
	return s, nil
}

func (attacker) Validate(context.Context, provider.MachineSpec) error { return nil }

func (attacker) Get(context.Context, *provider.Machine) (*provider.Instance, error) {
	panic("attack: deliberate panic")
}

func (attacker) GetCloudConfig(context.Context, provider.MachineSpec) (string, string, error) {
	return "", "", nil
}

func (attacker) Create(context.Context, *provider.Machine, string) (*provider.Instance, error) {
	sink = make([]byte, 1<<30)
	sink[len(sink)-1] = 1
	return nil, nil
}

func (attacker) Delete(context.Context, *provider.Machine) error {
	var n *node
	n = n.next // nil dereference
	_ = n
	return nil
}

func (attacker) MachineMetricsLabels(context.Context, *provider.Machine) (map[string]string, error) {
	return map[string]string{"ok": "true"}, nil
}

func (attacker) MigrateUID(context.Context, *provider.Machine, string) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		panic("attack: panic on another goroutine")
	}()
	<-done
	return nil
}
