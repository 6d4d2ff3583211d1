package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/wasmprov/wasmprov/provider"
	"github.com/wasmprov/wasmprov/runtime"
)

// Registry errors.
var (
	// ErrProviderNotFound: no provider of that name is loaded. It is not
	// cloud/errors.ErrInstanceNotFound: a missing provider says nothing
	// about the instance, so a controller must retry, never treat the
	// Machine's instance as gone.
	ErrProviderNotFound = provider.ErrProviderNotFound
	// ErrDuplicateProvider: a provider of that name already comes from
	// another source (another directory, or code).
	ErrDuplicateProvider = errors.New("provider name already in use")
	// ErrSmokeTest: a new version failed its smoke call and was rejected.
	ErrSmokeTest = errors.New("smoke call failed")
	// ErrClosed: the registry was closed.
	ErrClosed = errors.New("registry is closed")
	// ErrNotServing: the name is configured (its file, image entry or
	// registration is there) but no version of it loaded; the error says
	// why. It wraps ErrProviderNotFound too: to a caller, no provider
	// answers.
	ErrNotServing = errors.New("configured but not serving")
)

// Registry serves providers by name, loaded from directories and from code,
// and replaces them while they serve: a new version is compiled, validated,
// smoke-tested and pre-warmed off the call path, then swapped in atomically.
// Calls already running finish on the old version, which is then closed. A
// version that fails any step is rejected and the old one keeps serving.
//
// Holders of a *Handle (from Get) always call the current version.
type Registry struct {
	rt  *runtime.Runtime
	cfg config

	mu      sync.Mutex
	entries map[string]*entry
	dirs    []string
	closed  bool
	wg      sync.WaitGroup // syncs and drains in progress
	watch   *watcher       // nil until Watch

	// pinOwner names this registry's pins in OCI stores (oci.Store.Pin),
	// unique in the process: registries may share a store.
	pinOwner string
}

var registrySeq atomic.Int64

// entry is one provider name. It outlives removals (cur == nil) so that a
// Handle keeps working when the provider comes back.
type entry struct {
	name   string
	cur    atomic.Pointer[runtime.Provider]
	loadMu sync.Mutex // serialises loads of this name
	handle *Handle

	// guarded by Registry.mu
	src source

	// guarded by loadMu; the zero contentKey means "none" (no content
	// hashes to all zeros)
	key         contentKey // of the serving version
	rejectedKey contentKey
	rejectedErr error
	img         imageState // of the image entry, if the source is one

	// isImage: the directory entry is an image entry
	// ("<name>.provider.yaml"), polled by the watch.
	isImage atomic.Bool
	// failures counts the polls in a row that failed, retryAt (unix
	// nanoseconds of the registry's clock) is the first one that may try
	// again (backOff).
	failures atomic.Int64
	retryAt  atomic.Int64

	st entryStats
}

// New returns an empty Registry loading providers with rt.
func New(rt *runtime.Runtime, opts ...Option) *Registry {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	return &Registry{rt: rt, cfg: cfg, entries: map[string]*entry{},
		pinOwner: fmt.Sprintf("wasmprov-registry-%d", registrySeq.Add(1))}
}

// Get returns the provider name, like machine-controller's
// cloudprovider.ForProvider. The handle routes every call to the version
// serving at that moment, so holding it across reloads is right. The error
// wraps ErrProviderNotFound.
func (r *Registry) Get(name string) (*Handle, error) {
	r.mu.Lock()
	e, ok := r.entries[name]
	r.mu.Unlock()
	if !ok || e.cur.Load() == nil {
		if ok {
			e.st.mu.Lock()
			why, removed := strings.TrimPrefix(e.st.lastErr, fmt.Sprintf("provider %q: ", name)), e.st.removed
			e.st.mu.Unlock()
			if why != "" && !removed {
				return nil, fmt.Errorf("%w: %w: %q failed to load: %s", ErrProviderNotFound, ErrNotServing, name, why)
			}
		}
		return nil, fmt.Errorf("%w: %q", ErrProviderNotFound, name)
	}
	return e.handle, nil
}

// Provider is Get as a provider.Interface: a Registry is a
// controller.ProviderSource.
func (r *Registry) Provider(name string) (provider.Interface, error) {
	h, err := r.Get(name)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Names returns the names of the providers loaded, sorted.
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for n, e := range r.entries {
		if e.cur.Load() != nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// Close stops the watch, waits for loads in progress, then unloads every
// provider, waiting for calls in flight (or ctx).
func (r *Registry) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	wt := r.watch
	entries := make([]*entry, 0, len(r.entries))
	for _, e := range r.entries {
		entries = append(entries, e)
	}
	r.mu.Unlock()
	if wt != nil {
		wt.stop()
	}
	var errs []error
	for _, e := range entries {
		e.loadMu.Lock()
		e.st.mu.Lock()
		p := e.cur.Swap(nil)
		e.st.mu.Unlock()
		e.img.serving = ""
		r.pinImages(e, nil)
		e.loadMu.Unlock()
		if p != nil {
			if err := p.Close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("provider %q: %w", e.name, err))
			}
		}
	}
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, context.Cause(ctx))
	}
	return errors.Join(errs...)
}
