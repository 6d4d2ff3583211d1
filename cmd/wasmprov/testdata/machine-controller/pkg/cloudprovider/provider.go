// Package cloudprovider maps a Machine's CloudProvider to its provider.
package cloudprovider

import (
	"errors"

	cloudprovidertypes "k8c.io/machine-controller/pkg/cloudprovider/types"
	"k8c.io/machine-controller/sdk/providerconfig"
)

// ErrProviderNotFound is returned for a CloudProvider without a provider.
var ErrProviderNotFound = errors.New("cloudprovider not found")

var providers = map[providerconfig.CloudProvider]func(cvr providerconfig.ConfigVarResolver) cloudprovidertypes.Provider{
	// Upstream's entries, one per in-tree provider, are left out of this
	// stand-in. TestMachineControllerDropIn adds the wasm provider's entry
	// here, as docs/MACHINE-CONTROLLER.md's step 2 says.
}

// ForProvider returns the provider for p.
func ForProvider(p providerconfig.CloudProvider, cvr providerconfig.ConfigVarResolver) (cloudprovidertypes.Provider, error) {
	if f, ok := providers[p]; ok {
		return f(cvr), nil
	}
	return nil, ErrProviderNotFound
}
