// Command versioned is a test guest whose identity is set at link time:
//
//	go build -ldflags "-X main.Version=v2 -X main.Mode=hang" ...
//
// MachineMetricsLabels answers {"version": Version, "check": "<Version>/<Version>"}
// so a test can tell which build served a call and that the answer came
// from one complete build. A Machine label "spin" makes the call busy-loop
// that many million iterations (a slow call for drain tests). Mode "hang"
// makes AddDefaults (the registry's smoke call) loop forever; Mode "panic"
// makes it panic.
package main

import (
	"context"
	"strconv"

	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// Set with -ldflags -X.
var (
	Version = "dev"
	Mode    = ""
)

type versioned struct{}

func init() { provider.Register(versioned{}) }

func main() {}

var sink int

func spin(n int) {
	for i := 0; i < n*1_000_000; i++ {
		sink += i
	}
}

func (versioned) AddDefaults(_ context.Context, s provider.MachineSpec) (provider.MachineSpec, error) {
	switch Mode {
	case "hang":
		for {
			sink++
		}
	case "panic":
		panic("versioned guest built to panic")
	}
	return s, nil
}

func (versioned) Validate(context.Context, provider.MachineSpec) error { return nil }

func inst(m *provider.Machine) *provider.Instance {
	return &provider.Instance{Name: m.Name, ID: Version, ProviderID: "versioned://" + Version, Status: provider.StatusRunning}
}

func (versioned) Get(_ context.Context, m *provider.Machine) (*provider.Instance, error) {
	return inst(m), nil
}

func (versioned) GetCloudConfig(context.Context, provider.MachineSpec) (string, string, error) {
	return "", "", nil
}

func (versioned) Create(_ context.Context, m *provider.Machine, _ string) (*provider.Instance, error) {
	return inst(m), nil
}

func (versioned) Delete(context.Context, *provider.Machine) error { return nil }

func (versioned) MachineMetricsLabels(_ context.Context, m *provider.Machine) (map[string]string, error) {
	if n, err := strconv.Atoi(m.Labels["spin"]); err == nil {
		spin(n)
	}
	return map[string]string{"version": Version, "check": Version + "/" + Version}, nil
}

func (versioned) MigrateUID(context.Context, *provider.Machine, string) error { return nil }
