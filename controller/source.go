package controller

import (
	"context"
	"fmt"
	"sync"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/provider"
)

// ProviderSource finds the provider for a cloudProvider name. A plain map
// (MapSource) does; so does runtime/registry's hot-reloading Registry,
// whose handles always route to the provider's current version.
type ProviderSource interface {
	Provider(name string) (provider.Interface, error)
}

// ErrUnknownProvider is returned (wrapped) by a ProviderSource that has no
// provider of the requested name (runtime/registry's ErrProviderNotFound
// is the same error). The controller retries such Machines with backoff:
// a provider directory may gain the module later.
var ErrUnknownProvider = provider.ErrProviderNotFound

// MapSource is a fixed set of providers, safe for concurrent use.
type MapSource struct {
	mu sync.RWMutex
	m  map[string]provider.Interface
}

// NewMapSource returns a MapSource holding m (copied).
func NewMapSource(m map[string]provider.Interface) *MapSource {
	s := &MapSource{m: map[string]provider.Interface{}}
	for k, v := range m {
		s.m[k] = v
	}
	return s
}

// Set adds or replaces the provider called name.
func (s *MapSource) Set(name string, p provider.Interface) {
	s.mu.Lock()
	s.m[name] = p
	s.mu.Unlock()
}

// Provider implements ProviderSource.
func (s *MapSource) Provider(name string) (provider.Interface, error) {
	s.mu.RLock()
	p, ok := s.m[name]
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownProvider, name)
	}
	return p, nil
}

// ProviderSourceFunc adapts a function to ProviderSource.
type ProviderSourceFunc func(name string) (provider.Interface, error)

// Provider implements ProviderSource.
func (f ProviderSourceFunc) Provider(name string) (provider.Interface, error) { return f(name) }

// UserdataSource renders the userdata (cloud-init, Ignition...) passed to
// Create. machine-controller renders it from its OS plugins; wasmprov keeps
// that pluggable and ships a placeholder.
type UserdataSource interface {
	Userdata(ctx context.Context, machine *clusterv1alpha1.Machine, p provider.Interface) (string, error)
}

// UserdataFunc adapts a function to UserdataSource.
type UserdataFunc func(ctx context.Context, machine *clusterv1alpha1.Machine, p provider.Interface) (string, error)

// Userdata implements UserdataSource.
func (f UserdataFunc) Userdata(ctx context.Context, m *clusterv1alpha1.Machine, p provider.Interface) (string, error) {
	return f(ctx, m, p)
}

// PlaceholderUserdata is a minimal cloud-config naming the host after the
// Machine. It joins no cluster: plug in a real UserdataSource for that.
var PlaceholderUserdata UserdataSource = UserdataFunc(func(_ context.Context, m *clusterv1alpha1.Machine, _ provider.Interface) (string, error) {
	return fmt.Sprintf("#cloud-config\nhostname: %s\n", m.Name), nil
})
