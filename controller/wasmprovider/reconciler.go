package wasmprovider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/prometheus/client_golang/prometheus"
	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/controller/internal/workers"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/oci"
	"github.com/wasmprov/wasmprov/runtime/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Loader is what the Reconciler needs of a *registry.Registry.
type Loader interface {
	RegisterImage(ctx context.Context, name string, img registry.Image) error
	Register(ctx context.Context, name string, wasm []byte, policy *runtime.Policy) error
	Unregister(name string) error
	Status() []registry.Status
}

var _ Loader = (*registry.Registry)(nil)

// Pinner keeps content in the store an image source pulls into: the
// manifests an owner pins survive the store's GC, so that pinning a
// WasmProvider back to one of its status.revisions needs no pull. Pin
// replaces the owner's set; no digests unpins. *oci.Store implements it.
type Pinner interface {
	Pin(owner string, manifests ...digest.Digest)
}

// Options configures a Reconciler. Client, Kube and Loader are required.
type Options struct {
	// Client reads WasmProviders and writes their status
	// (NewRESTClient).
	Client Client
	// Kube reads pull Secrets and ConfigMap sources, and records Events:
	// core/v1 is all it asks of a client (any clientset satisfies it).
	Kube runtime.KubernetesClient
	// Loader is the registry the providers are loaded into.
	Loader Loader
	// NewOCIClient returns the OCI client for an image source;
	// dockerConfig is the content of its pull Secret's .dockerconfigjson,
	// nil when it has none. Required for image sources (nil: image
	// sources are refused with reason PullFailed).
	NewOCIClient func(dockerConfig []byte) (*oci.Client, error)
	// Store, if set, is the content store the OCI clients share: each
	// WasmProvider's status.revisions are pinned in it under the owner
	// "wasmprovider/<name>", and unpinned when the WasmProvider is deleted.
	Store Pinner
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
	// Clock times the retries, the PollInterval requeues and the
	// conditions' transition times (default: the real clock). Tests step
	// a fake one instead of sleeping.
	Clock clock.WithTicker
}

// Reconciler loads WasmProviders into a registry and reports on them.
type Reconciler struct {
	opts     Options
	log      *slog.Logger
	informer cache.SharedIndexInformer
	queue    workers.Queue
	// retry paces the retries of a refused spec or a failed reconcile.
	retry    workqueue.TypedRateLimiter[string]
	metrics  *metrics
	recorder record.EventRecorder
	started  atomic.Bool
	synced   atomic.Bool

	mu sync.Mutex
	// states is what the Reconciler remembers of each WasmProvider, by name.
	states map[string]*state
	// owners is the WasmProvider each cloud provider name is loaded for.
	owners map[string]string
	// cpLocks serialise the reconciles touching one cloud provider name
	// (two claimants may be in two workers at once).
	cpLocks map[string]*sync.Mutex
	// pending are the WasmProviders present when the informer synced and
	// not reconciled yet (HasSynced).
	pending map[string]struct{}
}

// state is what the Reconciler remembers of one WasmProvider.
type state struct {
	// cp is the cloud provider name it claimed and won, "" if none.
	cp string
	// loaded are the versions it loaded, by digest: a version serving
	// under cp is this WasmProvider's only if it is one of them.
	loaded map[string]wasmprovv1alpha1.Revision
	// urlApplied fingerprints the URL source loaded last, so a poll does
	// not fetch an unchanged module again.
	urlApplied string
	// ociKey and oci are the OCI client made for the pull Secret content
	// hashed as ociKey, reused while the Secret is unchanged.
	ociKey string
	oci    *oci.Client
	// written is the object the last status write returned; the informer
	// may still hold an older one (a resourceVersion in stale), which
	// must not be taken for the current status or the next reconcile
	// writes again.
	written *wasmprovv1alpha1.WasmProvider
	stale   map[string]struct{}
	// pinned is the set of digests pinned for it, in order.
	pinned []string
}

const cloudProviderIndex = "cloudProvider"

// New validates opts and returns a Reconciler; start it with Run.
func New(opts Options) (*Reconciler, error) {
	if opts.Client == nil || opts.Kube == nil || opts.Loader == nil {
		return nil, errors.New("wasmprovider: Options.Client, Options.Kube and Options.Loader are required")
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: time.Minute}
	}
	if opts.MaxModuleBytes <= 0 {
		opts.MaxModuleBytes = 64 << 20
	}
	if opts.IsLeader == nil {
		opts.IsLeader = func() bool { return true }
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Minute
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = time.Second
	}
	if opts.MaxRetryBackoff <= 0 {
		opts.MaxRetryBackoff = 5 * time.Minute
	}
	if opts.MaxRetryBackoff < opts.RetryBackoff {
		opts.MaxRetryBackoff = opts.RetryBackoff
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	r := &Reconciler{opts: opts, log: opts.Logger, metrics: newMetrics(),
		states: map[string]*state{}, owners: map[string]string{}, cpLocks: map[string]*sync.Mutex{}}
	if opts.Registerer != nil {
		if err := r.metrics.register(opts.Registerer); err != nil {
			return nil, fmt.Errorf("wasmprovider: registering metrics: %w", err)
		}
	}
	c := opts.Client
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) {
			return c.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, o)
		},
	}
	// No informer resync: the queue's PollInterval re-adds each key, and a
	// resync would bypass the retry backoff of a refused spec.
	r.informer = cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, c),
		&wasmprovv1alpha1.WasmProvider{}, 0, cache.Indexers{cloudProviderIndex: func(obj any) ([]string, error) {
			wp, ok := obj.(*wasmprovv1alpha1.WasmProvider)
			if !ok || wp.Spec.CloudProvider == "" {
				return nil, nil
			}
			return []string{wp.Spec.CloudProvider}, nil
		}})
	r.queue = workers.NewQueue("wasmproviders", opts.Clock)
	r.retry = workqueue.NewTypedItemExponentialFailureRateLimiter[string](opts.RetryBackoff, opts.MaxRetryBackoff)
	return r, nil
}

// specChanged compares what a reconcile reads of two versions of an
// object (a client that does not bump metadata.generation still
// triggers a reconcile on a spec change).
func specChanged(a, b *wasmprovv1alpha1.WasmProvider) bool {
	x, y := a.DeepCopy(), b.DeepCopy()
	return !equalSpec(&x.Spec, &y.Spec) || !x.CreationTimestamp.Equal(&y.CreationTimestamp)
}

// enqueue queues the WasmProvider name for a reconcile.
func (r *Reconciler) enqueue(name string) {
	r.queue.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
}

func (r *Reconciler) stateOf(name string) *state {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.states[name]
	if st == nil {
		st = &state{loaded: map[string]wasmprovv1alpha1.Revision{}, stale: map[string]struct{}{}}
		r.states[name] = st
	}
	return st
}

// reconcile brings the WasmProvider name's provider and status in line
// with its spec. It returns the result label and, for a result to retry
// with backoff, an error.
func (r *Reconciler) reconcile(ctx context.Context, name string) (string, error) {
	obj, exists, err := r.informer.GetIndexer().GetByKey(name)
	if err != nil {
		return resultError, fmt.Errorf("reading the informer's cache: %w", err)
	}
	var wp *wasmprovv1alpha1.WasmProvider
	if exists {
		wp, _ = obj.(*wasmprovv1alpha1.WasmProvider)
	}
	if wp == nil || wp.DeletionTimestamp != nil {
		r.release(name, true)
		return resultDeleted, nil
	}
	st := r.stateOf(name)
	r.mu.Lock()
	if st.written != nil {
		if _, old := st.stale[wp.ResourceVersion]; old {
			wp = st.written
		}
	}
	prevCP := st.cp
	r.mu.Unlock()
	wp = wp.DeepCopy()
	cp := wp.Spec.CloudProvider
	now := metav1.NewTime(r.opts.Clock.Now().Truncate(time.Second))

	if !cloudProviderName.MatchString(cp) {
		if prevCP != "" {
			r.release(name, false)
		}
		o := outcome{now: now, ref: sourceRef(&wp.Spec.Source), verify: wp.Spec.Verify != nil,
			err: invalidSpec("spec.cloudProvider %q: want 1 to 63 lower-case letters, digits, '-', '_' or '.'", cp)}
		return r.finish(ctx, wp, st, o)
	}
	if prevCP != "" && prevCP != cp {
		// Renamed: the old name is released (to its next claimant, or
		// unloaded) before the new one is claimed.
		r.release(name, false)
	}
	unlock := r.lockCP(cp)
	defer unlock()

	if winner, won := r.claim(name, cp, st); !won {
		o := outcome{now: now, conflictWith: winner}
		return r.finish(ctx, wp, st, o)
	}
	loadErr := r.load(ctx, wp, st)
	o := outcome{now: now, err: loadErr, ref: sourceRef(&wp.Spec.Source), verify: wp.Spec.Verify != nil && len(wp.Spec.Verify.Raw) > 0}
	o.serving = r.serving(cp, st, wp, loadErr == nil)
	if o.serving != nil {
		o.stale = r.staleness(cp)
	}
	return r.finish(ctx, wp, st, o)
}
