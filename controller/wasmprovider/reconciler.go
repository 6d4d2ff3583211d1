package wasmprovider

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/oci"
	"github.com/wasmprov/wasmprov/runtime/registry"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// Loader is what the Reconciler needs of a *registry.Registry.
type Loader interface {
	RegisterImage(ctx context.Context, name string, img registry.Image) error
	Register(ctx context.Context, name string, wasm []byte, policy *runtime.Policy) error
	Unregister(name string) error
	Status() []registry.Status
}

var _ Loader = (*registry.Registry)(nil)

// Options configures a Reconciler. Client, Kube and Loader are required.
type Options struct {
	// Client reads WasmProviders and writes their status
	// (NewRESTClient).
	Client Client
	// Kube reads pull Secrets and ConfigMap sources, and records Events.
	Kube kubernetes.Interface
	// Loader is the registry the providers are loaded into.
	Loader Loader
	// NewOCIClient returns the OCI client for an image source;
	// dockerConfig is the content of its pull Secret's .dockerconfigjson,
	// nil when it has none. Required for image sources (nil: image
	// sources are refused with reason PullFailed).
	NewOCIClient func(dockerConfig []byte) (*oci.Client, error)
	// HTTPClient fetches URL sources (default: a client with a 1 minute
	// timeout). MaxModuleBytes caps a ConfigMap or URL module (default
	// 64 MiB).
	HTTPClient     *http.Client
	MaxModuleBytes int64
	// Recorder records Events on WasmProviders (default: one writing to
	// Kube's events API as "wasmprov-controller").
	Recorder record.EventRecorder
	// IsLeader says whether this replica writes status and Events
	// (default: always).
	IsLeader func() bool
	// Workers reconciling concurrently (default 2).
	Workers int
	// PollInterval: how often an image source whose pull policy is Always
	// is resolved again, and every WasmProvider reconciled (default 1m).
	PollInterval time.Duration
	// RetryBackoff: first and maximum delay before a refused spec is
	// tried again (default 1s and 5m, doubling).
	RetryBackoff, MaxRetryBackoff time.Duration
	// Registerer receives the reconciler's metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Reconciler loads WasmProviders into a registry and reports on them.
type Reconciler struct {
	opts Options
}

// New validates opts and returns a Reconciler; start it with Run.
func New(opts Options) (*Reconciler, error) {
	if opts.Client == nil || opts.Kube == nil || opts.Loader == nil {
		return nil, errors.New("wasmprovider: Options.Client, Options.Kube and Options.Loader are required")
	}
	return &Reconciler{opts: opts}, nil
}

// Run reconciles until ctx is cancelled. It returns once its workers have
// stopped; providers it loaded stay loaded (the registry's Close unloads
// them).
func (r *Reconciler) Run(ctx context.Context) error {
	return errors.New("wasmprovider: not implemented yet")
}

// HasSynced reports whether the WasmProvider informer has synced and every
// WasmProvider seen at that point was reconciled once.
func (r *Reconciler) HasSynced() bool { return false }

// LeadershipChanged tells the Reconciler that IsLeader may have changed:
// a new leader re-reconciles every WasmProvider so that status converges.
func (r *Reconciler) LeadershipChanged() {}
