package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/hostfuncs"
	"github.com/wasmprov/wasmprov/internal/ratelimit"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/resultcache"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Runtime loads providers. It owns the compilation cache shared by all of
// them, so loading the same module twice (a reload, a second provider name)
// compiles once. A Runtime is safe for concurrent use.
type Runtime struct {
	cfg    config
	engine engine.Engine
	// host is every host function a module may import: wasmprov_v1 and
	// the embedder's (WithHostFunctions), built once so that every
	// compile binds the same table.
	host hostTable
	// results is the inspect result cache beside the compiled code.
	results resultcache.Cache

	mu        sync.Mutex
	providers map[*Provider]struct{}
	// limiters pace each provider name's HTTP (pacing.go).
	limiters map[string]*ratelimit.Limiter
}

type config struct {
	logger        *slog.Logger
	cacheDir      string
	kube          KubernetesClient
	defaultPolicy Policy
	interruptible bool
	observer      CallObserver
	wrapTransport func(http.RoundTripper) http.RoundTripper
	engine        Engine
	hostFunctions []hostfuncs.Function
}

// CallObserver is told about every finished call: provider, method,
// duration and error (nil on success; classify it with ErrorClass). It runs
// on the caller's goroutine, so it must be fast and safe for concurrent use.
type CallObserver func(provider string, method abi.Method, d time.Duration, err error)

// WithCallObserver installs o, e.g. a metrics collector.
func WithCallObserver(o CallObserver) Option { return func(c *config) { c.observer = o } }

// Option configures New.
type Option func(*config)

// WithLogger sets the logger for host diagnostics and guest logs (default
// slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithCompilationCacheDir keeps compiled modules in dir, so a new process
// loads a known module in milliseconds instead of recompiling it. The cache
// is keyed by module content, engine and engine version, and architecture
// (and, for the instrumented module, the instrumentation's format version);
// dir may be shared between processes.
func WithCompilationCacheDir(dir string) Option { return func(c *config) { c.cacheDir = dir } }

// KubernetesClient is all the runtime asks of a Kubernetes client: the
// core/v1 API, from which config_var reads the Secrets and ConfigMaps that
// Machines reference. Every client-go clientset (kubernetes.Interface, its
// fakes) satisfies it; asking for no more keeps the other API groups'
// clients out of an embedder's build and out of the sandbox's reach.
type KubernetesClient interface {
	CoreV1() corev1client.CoreV1Interface
}

// WithKubernetesClient lets config_var read the Secrets and ConfigMaps that
// Machines reference.
func WithKubernetesClient(k KubernetesClient) Option { return func(c *config) { c.kube = k } }

// WithDefaultPolicy sets the policy of providers loaded without one.
func WithDefaultPolicy(p Policy) Option { return func(c *config) { c.defaultPolicy = p } }

// WithInterruptibleGuests controls whether guests are compiled so that a
// cancelled context or passed deadline stops a running call (default true).
// Turning it off makes calls cheaper but leaves a guest that loops forever
// running forever: only for trusted, benchmarked providers.
func WithInterruptibleGuests(on bool) Option { return func(c *config) { c.interruptible = on } }

// New returns a Runtime on the engine WithEngine chose (default wazero).
// Nothing is compiled or started until a provider is loaded.
func New(opts ...Option) (*Runtime, error) {
	cfg := config{logger: slog.Default(), interruptible: true}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.engine == "" {
		cfg.engine = EngineWazero
	}
	host, err := newHostTable(cfg.hostFunctions)
	if err != nil {
		return nil, err
	}
	newEngine, ok := engines[cfg.engine]
	if !ok {
		return nil, fmt.Errorf("engine %q: %w", cfg.engine, ErrEngineUnavailable)
	}
	eng, err := newEngine(cfg)
	if err != nil {
		return nil, fmt.Errorf("engine %s: %w", cfg.engine, err)
	}
	return &Runtime{cfg: cfg, engine: eng, host: host, providers: map[*Provider]struct{}{},
		results: resultcache.New(cfg.cacheDir, Version, abi.Version)}, nil
}

// Close closes every provider loaded by r (waiting for calls in flight) and
// the engine with its compilation cache.
func (r *Runtime) Close(ctx context.Context) error {
	var first error
	for _, p := range r.Providers() {
		if err := p.Close(ctx); err != nil && first == nil {
			first = err
		}
	}
	if err := r.engine.Close(ctx); err != nil && first == nil {
		first = err
	}
	return first
}

// Providers lists the providers loaded by r and not yet closed, in no
// particular order.
func (r *Runtime) Providers() []*Provider {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Provider, 0, len(r.providers))
	for p := range r.providers {
		out = append(out, p)
	}
	return out
}

func (r *Runtime) track(p *Provider) {
	r.mu.Lock()
	r.providers[p] = struct{}{}
	r.mu.Unlock()
}

func (r *Runtime) untrack(p *Provider) {
	r.mu.Lock()
	delete(r.providers, p)
	r.mu.Unlock()
}
