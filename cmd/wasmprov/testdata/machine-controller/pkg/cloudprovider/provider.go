// Package cloudprovider maps a Machine's CloudProvider to its provider.
package cloudprovider

import (
	"errors"

	"k8c.io/machine-controller/pkg/cloudprovider/provider/hetznerwasm"
	cloudprovidertypes "k8c.io/machine-controller/pkg/cloudprovider/types"
	"k8c.io/machine-controller/sdk/providerconfig"
)

// ErrProviderNotFound is returned for a CloudProvider without a provider.
var ErrProviderNotFound = errors.New("cloudprovider not found")

var providers = map[providerconfig.CloudProvider]func(cvr providerconfig.ConfigVarResolver) cloudprovidertypes.Provider{
	// The entry a maintainer adds for a wasm provider: its package is the
	// one file `wasmprov gen machine-controller-adapter` writes.
	"hetzner-wasm": func(cvr providerconfig.ConfigVarResolver) cloudprovidertypes.Provider {
		return hetznerwasm.New(cvr)
	},
}

// ForProvider returns the provider for p.
func ForProvider(p providerconfig.CloudProvider, cvr providerconfig.ConfigVarResolver) (cloudprovidertypes.Provider, error) {
	if f, ok := providers[p]; ok {
		return f(cvr), nil
	}
	return nil, ErrProviderNotFound
}
