package wasmprovider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/prometheus/client_golang/prometheus"
	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/oci"
	"github.com/wasmprov/wasmprov/runtime/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
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
	// Kube reads pull Secrets and ConfigMap sources, and records Events.
	Kube kubernetes.Interface
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
}

// Reconciler loads WasmProviders into a registry and reports on them.
type Reconciler struct {
	opts     Options
	log      *slog.Logger
	informer cache.SharedIndexInformer
	queue    workqueue.TypedRateLimitingInterface[string]
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
	r.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](opts.RetryBackoff, opts.MaxRetryBackoff),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "wasmproviders"})
	if _, err := r.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: r.enqueue,
		// A status-only update (ours, mostly) changes nothing to do;
		// enqueueing it would also retry a refused spec at once, around
		// its backoff.
		UpdateFunc: func(o, n any) {
			ow, ok1 := o.(*wasmprovv1alpha1.WasmProvider)
			nw, ok2 := n.(*wasmprovv1alpha1.WasmProvider)
			if ok1 && ok2 && ow.Generation == nw.Generation && ow.Generation != 0 &&
				ow.DeletionTimestamp.Equal(nw.DeletionTimestamp) && !specChanged(ow, nw) {
				return
			}
			r.enqueue(n)
		},
		DeleteFunc: r.enqueue,
	}); err != nil {
		return nil, fmt.Errorf("wasmprovider: %w", err)
	}
	return r, nil
}

// specChanged compares what a reconcile reads of two versions of an
// object (a client that does not bump metadata.generation still
// triggers a reconcile on a spec change).
func specChanged(a, b *wasmprovv1alpha1.WasmProvider) bool {
	x, y := a.DeepCopy(), b.DeepCopy()
	return !equalSpec(&x.Spec, &y.Spec) || !x.CreationTimestamp.Equal(&y.CreationTimestamp)
}

func (r *Reconciler) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		r.log.Error("wasmprovider: cannot key object", "err", err)
		return
	}
	r.queue.Add(key)
}

// Run reconciles until ctx is cancelled. It returns once its workers have
// stopped; providers it loaded stay loaded (the registry's Close unloads
// them).
func (r *Reconciler) Run(ctx context.Context) error {
	if !r.started.CompareAndSwap(false, true) {
		return errors.New("wasmprovider: Run called twice")
	}
	r.recorder = r.opts.Recorder
	if r.recorder == nil {
		b := record.NewBroadcaster(record.WithContext(ctx))
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: r.opts.Kube.CoreV1().Events("")})
		defer b.Shutdown()
		r.recorder = b.NewRecorder(Scheme, corev1.EventSource{Component: "wasmprov-controller"})
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	// The queue shuts down before the workers are waited for (defers run
	// last in, first out), so that they return.
	defer r.queue.ShutDown()
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.informer.RunWithContext(ctx)
	}()
	if !cache.WaitForCacheSync(ctx.Done(), r.informer.HasSynced) {
		return nil // cancelled before the first list
	}
	r.mu.Lock()
	r.pending = map[string]struct{}{}
	for _, k := range r.informer.GetStore().ListKeys() {
		r.pending[k] = struct{}{}
	}
	r.synced.Store(len(r.pending) == 0)
	r.mu.Unlock()
	for range r.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	return nil
}

// HasSynced reports whether the WasmProvider informer has synced and every
// WasmProvider seen at that point was reconciled once.
func (r *Reconciler) HasSynced() bool { return r.synced.Load() }

// LeadershipChanged tells the Reconciler that IsLeader may have changed:
// a new leader re-reconciles every WasmProvider so that status converges.
func (r *Reconciler) LeadershipChanged() {
	for _, k := range r.informer.GetStore().ListKeys() {
		r.queue.Add(k)
	}
}

func (r *Reconciler) processNext(ctx context.Context) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	result, err := r.reconcile(ctx, key)
	r.metrics.reconciles.WithLabelValues(result).Inc()
	switch {
	case ctx.Err() != nil:
		// Shutting down: what failed was cut short, not refused.
	case err != nil:
		if result == resultError {
			r.log.Error("wasmprovider: reconcile failed", "wasmprovider", key, "err", err)
		} else {
			r.log.Debug("wasmprovider: version refused; retrying with backoff", "wasmprovider", key, "err", err)
		}
		r.queue.AddRateLimited(key)
	case result == resultDeleted:
		r.queue.Forget(key)
	default:
		r.queue.Forget(key)
		r.queue.AddAfter(key, r.opts.PollInterval)
	}
	r.mu.Lock()
	if r.pending != nil {
		delete(r.pending, key)
		if len(r.pending) == 0 {
			r.synced.Store(true)
		}
	}
	r.mu.Unlock()
	return true
}

// cloudProviderName is what spec.cloudProvider may be.
var cloudProviderName = regexp.MustCompile(`^[a-z0-9._-]{1,63}$`)

// lockCP locks the cloud provider names given (sorted, so that two
// reconciles never wait on each other crosswise) and returns the unlock.
func (r *Reconciler) lockCP(names ...string) func() {
	sort.Strings(names)
	var locked []*sync.Mutex
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		r.mu.Lock()
		m := r.cpLocks[n]
		if m == nil {
			m = &sync.Mutex{}
			r.cpLocks[n] = m
		}
		r.mu.Unlock()
		m.Lock()
		locked = append(locked, m)
	}
	return func() {
		for i := len(locked) - 1; i >= 0; i-- {
			locked[i].Unlock()
		}
	}
}

// claimants are the live WasmProviders naming cp, oldest first (creation
// time, then name): the first one serves it.
func (r *Reconciler) claimants(cp string) []*wasmprovv1alpha1.WasmProvider {
	objs, err := r.informer.GetIndexer().ByIndex(cloudProviderIndex, cp)
	if err != nil {
		return nil
	}
	var out []*wasmprovv1alpha1.WasmProvider
	for _, o := range objs {
		if wp, ok := o.(*wasmprovv1alpha1.WasmProvider); ok && wp.DeletionTimestamp == nil {
			out = append(out, wp)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	return out
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
	now := metav1.NewTime(time.Now().Truncate(time.Second))

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

	cl := r.claimants(cp)
	if len(cl) == 0 || cl[0].Name != name {
		winner := ""
		if len(cl) > 0 {
			winner = cl[0].Name
		}
		r.mu.Lock()
		if r.owners[cp] == name {
			// An older claimant appeared: it takes the name over by
			// loading its own version.
			delete(r.owners, cp)
		}
		st.cp = ""
		r.mu.Unlock()
		if winner != "" {
			r.queue.Add(winner)
		}
		o := outcome{now: now, conflictWith: winner}
		return r.finish(ctx, wp, st, o)
	}
	r.mu.Lock()
	took := r.owners[cp] != name
	r.owners[cp] = name
	st.cp = cp
	r.mu.Unlock()
	if took {
		for _, c := range cl[1:] {
			r.queue.Add(c.Name)
		}
	}
	loadErr := r.load(ctx, wp, st)
	o := outcome{now: now, err: loadErr, ref: sourceRef(&wp.Spec.Source), verify: wp.Spec.Verify != nil && len(wp.Spec.Verify.Raw) > 0}
	o.serving = r.serving(cp, st, wp, loadErr == nil)
	return r.finish(ctx, wp, st, o)
}

// serving returns the version serving cp if this WasmProvider loaded it;
// justLoaded records the serving version as loaded by it (the spec's
// version was just accepted).
func (r *Reconciler) serving(cp string, st *state, wp *wasmprovv1alpha1.WasmProvider, justLoaded bool) *wasmprovv1alpha1.Revision {
	var s *registry.Status
	for _, x := range r.opts.Loader.Status() {
		if x.Name == cp {
			s = &x
			break
		}
	}
	if s == nil || !s.Serving {
		return nil
	}
	d := s.ImageDigest
	if d == "" {
		d = "sha256:" + s.SHA256
	}
	since := metav1.NewTime(s.LoadedAt.Truncate(time.Second))
	r.mu.Lock()
	defer r.mu.Unlock()
	if justLoaded {
		ref := s.Image
		if ref == "" {
			ref = sourceRef(&wp.Spec.Source)
		}
		if old, ok := st.loaded[d]; !ok || old.Ref != ref || !old.Since.Equal(&since) {
			st.loaded[d] = wasmprovv1alpha1.Revision{Digest: d, Ref: ref, ModuleSHA256: s.SHA256, Since: since}
		}
	}
	rev, ok := st.loaded[d]
	if !ok {
		return nil
	}
	rev.Since = since
	return &rev
}

// release gives up the cloud provider name the WasmProvider name won: its
// next claimant takes it over, or it is unregistered. deleted also forgets
// the WasmProvider and unpins its revisions.
func (r *Reconciler) release(name string, deleted bool) {
	r.mu.Lock()
	st := r.states[name]
	cp := ""
	if st != nil {
		cp = st.cp
	}
	r.mu.Unlock()
	if cp != "" {
		unlock := r.lockCP(cp)
		r.mu.Lock()
		owner := r.owners[cp] == name
		if owner {
			delete(r.owners, cp)
		}
		st.cp = ""
		r.mu.Unlock()
		if owner {
			next := ""
			for _, c := range r.claimants(cp) {
				if c.Name != name {
					next = c.Name
					break
				}
			}
			if next != "" {
				r.log.Info("wasmprovider: cloud provider handed over", "cloudProvider", cp, "from", name, "to", next)
				r.queue.Add(next)
			} else if err := r.opts.Loader.Unregister(cp); err != nil && !errors.Is(err, registry.ErrProviderNotFound) {
				r.log.Error("wasmprovider: unregistering", "cloudProvider", cp, "wasmprovider", name, "err", err)
			} else {
				r.log.Info("wasmprovider: cloud provider unregistered", "cloudProvider", cp, "wasmprovider", name)
			}
		}
		unlock()
	}
	if !deleted {
		return
	}
	if st != nil && len(st.pinned) > 0 && r.opts.Store != nil {
		r.opts.Store.Pin(pinOwner(name))
	}
	r.mu.Lock()
	delete(r.states, name)
	r.mu.Unlock()
}

func pinOwner(name string) string { return "wasmprovider/" + name }

// load loads the spec's version into the Loader under spec.cloudProvider.
func (r *Reconciler) load(ctx context.Context, wp *wasmprovv1alpha1.WasmProvider, st *state) error {
	spec := &wp.Spec
	if err := checkSource(spec); err != nil {
		return err
	}
	policy, err := policyOf(spec)
	if err != nil {
		return err
	}
	cp := spec.CloudProvider
	switch src := spec.Source; {
	case src.Image != nil:
		c, err := r.ociClient(ctx, st, src.Image)
		if err != nil {
			return err
		}
		img := registry.Image{Ref: src.Image.Ref, PullPolicy: registry.PullPolicy(src.Image.PullPolicy), Policy: policy, Client: c}
		if spec.Verify != nil && len(spec.Verify.Raw) > 0 {
			img.Verify = append([]byte(nil), spec.Verify.Raw...)
		}
		return r.opts.Loader.RegisterImage(ctx, cp, img)
	case src.ConfigMap != nil:
		b, err := r.configMapModule(ctx, src.ConfigMap)
		if err != nil {
			return err
		}
		return r.opts.Loader.Register(ctx, cp, b, policy)
	default:
		fp := fmt.Sprintf("%s\x00%s\x00%s\x00%+v", cp, src.URL.URL, src.URL.SHA256, policy)
		r.mu.Lock()
		applied := st.urlApplied == fp
		r.mu.Unlock()
		if applied && r.servesSHA(cp, src.URL.SHA256) {
			return nil
		}
		b, err := r.urlModule(ctx, src.URL)
		if err != nil {
			return err
		}
		if err := r.opts.Loader.Register(ctx, cp, b, policy); err != nil {
			return err
		}
		r.mu.Lock()
		st.urlApplied = fp
		r.mu.Unlock()
		return nil
	}
}

func (r *Reconciler) servesSHA(cp, sha string) bool {
	want, err := hexSHA256(sha)
	if err != nil {
		return false
	}
	for _, s := range r.opts.Loader.Status() {
		if s.Name == cp {
			return s.Serving && s.SHA256 == want
		}
	}
	return false
}

// ociClient returns the OCI client for an image source, made again only
// when its pull Secret's content changed.
func (r *Reconciler) ociClient(ctx context.Context, st *state, img *wasmprovv1alpha1.ImageSource) (*oci.Client, error) {
	dc, err := r.dockerConfig(ctx, img)
	if err != nil {
		return nil, err
	}
	if r.opts.NewOCIClient == nil {
		return nil, pullFailed(errors.New("no OCI client is configured for image sources"))
	}
	key := digest.FromBytes(dc).String()
	if dc == nil {
		key = "none"
	}
	r.mu.Lock()
	c := st.oci
	if st.ociKey != key {
		c = nil
	}
	r.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err = r.opts.NewOCIClient(dc)
	if err != nil {
		// The error may quote the Secret's content; say only what failed.
		return nil, pullFailed(errors.New("the pull secret's .dockerconfigjson could not be used for an OCI client"))
	}
	r.mu.Lock()
	st.oci, st.ociKey = c, key
	r.mu.Unlock()
	return c, nil
}

// finish pins the revisions, writes status and Events as the leader, and
// turns the outcome into a result.
func (r *Reconciler) finish(ctx context.Context, wp *wasmprovv1alpha1.WasmProvider, st *state, o outcome) (string, error) {
	want := desiredStatus(wp, o)
	r.pin(wp.Name, st, want.Revisions)
	if r.opts.IsLeader() {
		// Events after the write: a write that fails is retried with the
		// old status still in place, and the retry records them then,
		// once.
		if err := r.writeStatus(ctx, wp, st, o); err != nil {
			return resultError, err
		}
		r.events(wp, &want, o)
	}
	switch {
	case o.conflictWith != "":
		return resultConflict, nil
	case o.err != nil:
		return resultRefused, o.err
	}
	return resultOK, nil
}

// pin pins revs' digests under the WasmProvider's owner, when they
// changed.
func (r *Reconciler) pin(name string, st *state, revs []wasmprovv1alpha1.Revision) {
	if r.opts.Store == nil {
		return
	}
	var ds []string
	for _, rv := range revs {
		// A ConfigMap or URL version is named by its module's digest and
		// is no manifest of the store: nothing to keep for it.
		if rv.Digest != "sha256:"+rv.ModuleSHA256 {
			ds = append(ds, rv.Digest)
		}
	}
	r.mu.Lock()
	same := equalStrings(st.pinned, ds)
	st.pinned = ds
	r.mu.Unlock()
	if same {
		return
	}
	var dd []digest.Digest
	for _, d := range ds {
		dd = append(dd, digest.Digest(d))
	}
	r.opts.Store.Pin(pinOwner(name), dd...)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// writeStatus writes the status o gives wp if it differs from the one
// the API server has, re-reading the object on a conflict.
func (r *Reconciler) writeStatus(ctx context.Context, wp *wasmprovv1alpha1.WasmProvider, st *state, o outcome) error {
	cur := wp
	seen := []string{wp.ResourceVersion}
	for attempt := 0; ; attempt++ {
		want := desiredStatus(cur, o)
		if statusEqual(&cur.Status, &want) {
			return nil
		}
		upd := cur.DeepCopy()
		upd.Status = want
		out, err := r.opts.Client.UpdateStatus(ctx, upd)
		if err == nil {
			r.metrics.statusWrites.Inc()
			r.mu.Lock()
			st.written = out.DeepCopy()
			for _, rv := range seen {
				st.stale[rv] = struct{}{}
			}
			r.mu.Unlock()
			return nil
		}
		if !apierrors.IsConflict(err) || attempt >= 4 {
			return fmt.Errorf("writing the status of WasmProvider %s: %w", wp.Name, err)
		}
		cur, err = r.opts.Client.Get(ctx, wp.Name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("re-reading WasmProvider %s after a conflict: %w", wp.Name, err)
		}
		seen = append(seen, cur.ResourceVersion)
	}
}
