// Package hzprovider is machine-controller's Hetzner Cloud provider written
// against the wasmprov guest SDK. The cloud API is behind the API
// interface, so the same provider logic runs over a small encoding/json
// client (examples/hetzner) or over the official hcloud-go SDK
// (examples/hetzner-hcloudgo).
package hzprovider

import (
	"context"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

const (
	// MachineUIDLabel labels a server with the UID of its Machine, as
	// upstream does; Get finds servers by it.
	MachineUIDLabel = "machine-uid"
	// TemporaryKeyLabel marks the throw-away SSH keys Create makes.
	TemporaryKeyLabel = "wasmprov-temporary-key"
	// Finalizer is added before a server is created and removed once it
	// is gone, so a Machine cannot disappear while its server exists.
	Finalizer = "hetzner.wasmprov.io/delete-server"
	// ServerIDAnnotation records the server's ID on the Machine.
	ServerIDAnnotation = "hetzner.wasmprov.io/server-id"
	// PlacementGroupAnnotation records the placement group Create put the
	// server in, so that Delete can remove the group once it is empty.
	PlacementGroupAnnotation = "hetzner.wasmprov.io/placement-group-id"
	// PlacementGroupLimit is how many servers a spread placement group
	// holds.
	PlacementGroupLimit = 10
	// CSIDriver is the Hetzner CSI driver's name; its volume handles are
	// volume IDs.
	CSIDriver = "csi.hetzner.cloud"
)

// Capabilities the provider needs: HTTP for the API, config_var for the
// token, machine_update for the finalizer and annotation, pv_list for the
// volumes, clock to poll actions and random for the temporary SSH key.
var Capabilities = []abi.Capability{abi.CapHTTP, abi.CapConfigVar, abi.CapMachineUpdate,
	abi.CapPVList, abi.CapClock, abi.CapRandom}

// Provider is the Hetzner provider.
type Provider struct {
	NewAPI NewAPI
	// ActionTimeout bounds the wait for one action (default 60s).
	ActionTimeout time.Duration
}

// Register registers a Provider over newAPI with the capabilities it
// needs, and async_delete: Delete returns while the cloud deletes.
func Register(newAPI NewAPI) {
	provider.Register(&Provider{NewAPI: newAPI}, provider.Needs(Capabilities...), provider.AsyncDelete())
}

func (p *Provider) api(c *Config) API { return p.NewAPI(c.Endpoint, c.Token) }

// GetCloudConfig returns no cloud config, as upstream: the Hetzner cloud
// controller manager is configured on its own, not through the kubelet.
func (p *Provider) GetCloudConfig(context.Context, provider.MachineSpec) (string, string, error) {
	return "", "", nil
}

// MachineMetricsLabels reports size and location (a datacenter's location
// when the spec names a datacenter), as upstream, with no API call.
func (p *Provider) MachineMetricsLabels(ctx context.Context, m *provider.Machine) (map[string]string, error) {
	c, err := getConfig(ctx, m.Spec, false)
	if err != nil {
		return nil, err
	}
	loc := c.Location
	if l, ok := locationOfDatacenter(c.Datacenter); loc == "" && ok {
		loc = l
	}
	return map[string]string{"size": c.ServerType, "location": loc}, nil
}
