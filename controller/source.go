package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"
)

// ProviderSource finds the provider for a cloudProvider name. A plain map
// (MapSource) does; so does runtime/registry's hot-reloading Registry,
// whose handles always route to the provider's current version.
type ProviderSource interface {
	Get(name string) (cloud.ContextProvider, error)
}

// ErrUnknownProvider is returned (wrapped) by a ProviderSource that has no
// provider of the requested name. The controller retries such Machines with
// backoff: a provider directory may gain the module later.
var ErrUnknownProvider = errors.New("unknown cloud provider")

// MapSource is a fixed set of providers, safe for concurrent use.
type MapSource struct {
	mu sync.RWMutex
	m  map[string]cloud.ContextProvider
}

// NewMapSource returns a MapSource holding m (copied).
func NewMapSource(m map[string]cloud.ContextProvider) *MapSource {
	s := &MapSource{m: map[string]cloud.ContextProvider{}}
	for k, v := range m {
		s.m[k] = v
	}
	return s
}

// Set adds or replaces the provider called name.
func (s *MapSource) Set(name string, p cloud.ContextProvider) {
	s.mu.Lock()
	s.m[name] = p
	s.mu.Unlock()
}

// Get implements ProviderSource.
func (s *MapSource) Get(name string) (cloud.ContextProvider, error) {
	s.mu.RLock()
	p, ok := s.m[name]
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownProvider, name)
	}
	return p, nil
}

// ProviderSourceFunc adapts a function to ProviderSource.
type ProviderSourceFunc func(name string) (cloud.ContextProvider, error)

// Get implements ProviderSource.
func (f ProviderSourceFunc) Get(name string) (cloud.ContextProvider, error) { return f(name) }

// UserdataSource renders the userdata (cloud-init, Ignition...) passed to
// Create. machine-controller renders it from its OS plugins; wasmprov keeps
// that pluggable and ships a placeholder.
type UserdataSource interface {
	Userdata(ctx context.Context, machine *clusterv1alpha1.Machine, provider cloud.ContextProvider) (string, error)
}

// UserdataFunc adapts a function to UserdataSource.
type UserdataFunc func(ctx context.Context, machine *clusterv1alpha1.Machine, provider cloud.ContextProvider) (string, error)

// Userdata implements UserdataSource.
func (f UserdataFunc) Userdata(ctx context.Context, m *clusterv1alpha1.Machine, p cloud.ContextProvider) (string, error) {
	return f(ctx, m, p)
}

// PlaceholderUserdata is a minimal cloud-config naming the host after the
// Machine. It joins no cluster: plug in a real UserdataSource for that.
var PlaceholderUserdata UserdataSource = UserdataFunc(func(_ context.Context, m *clusterv1alpha1.Machine, _ cloud.ContextProvider) (string, error) {
	return fmt.Sprintf("#cloud-config\nhostname: %s\n", m.Name), nil
})
