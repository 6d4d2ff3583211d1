// Package controller reconciles cluster.k8s.io/v1alpha1 Machines with
// machine-controller's semantics, using any provider.Interface — in
// particular the WebAssembly providers of package runtime — found by the
// Machine's providerSpec.value.cloudProvider.
//
// Its workers are controller-runtime's (a reconcile.Reconciler fed by a
// source.Informer), and so is its Machine client (RESTMachineClient, over
// controller-runtime's uncached client); around them, client-go: a shared
// informer for Machines, a shared informer for PersistentVolumes (the
// PVLister providers get). It runs in controller-runtime's manager
// (NewManager, SetupWithManager), which elects the leader with a Lease;
// RATIONALE.md says why the workers are not the builder's.
package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/controller/internal/createcap"
	"github.com/wasmprov/wasmprov/controller/internal/workers"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// FinalizerDeleteInstance is machine-controller's finalizer: present while
// the cloud instance may exist, removed once the provider no longer finds it.
const FinalizerDeleteInstance = "machine-delete-finalizer"

// Options configures a Controller. Machines and Providers are required.
type Options struct {
	// Machines reads and writes Machines (NewRESTMachineClient).
	Machines MachineClient
	// Kube is used for the PersistentVolume informer (the providers'
	// PVLister) and for the leader election Lease. Optional without leader
	// election: providers then get no PVLister.
	Kube KubeClient
	// Providers resolves providerSpec.value.cloudProvider.
	Providers ProviderSource
	// Userdata renders Create's userdata (default PlaceholderUserdata).
	Userdata UserdataSource
	// Namespace limits the controller to one namespace ("" = all).
	Namespace string
	// Workers is the number of concurrent reconciles (default 5, as
	// machine-controller).
	Workers int
	// ResyncPeriod re-enqueues every Machine periodically (default 10m).
	ResyncPeriod time.Duration
	// PollInterval is how soon a Machine is looked at again while its
	// instance is being created or deleted (default 5s).
	PollInterval time.Duration
	// MaxDeletePollInterval caps the backoff between Cleanup calls while a
	// Cleaner reports a deletion in progress: the first retry comes after
	// PollInterval, each later one after twice the previous wait, up to
	// this (default 5m).
	MaxDeletePollInterval time.Duration
	// MetricsInterval is how often the providers that implement
	// MetricsSetter are handed their Machines (default 10m, as
	// machine-controller; negative disables).
	MetricsInterval time.Duration
	// MaxConcurrentCreatesPerProvider and MaxConcurrentCreatesPerOwner cap
	// the Creates running at once, per provider and per owner (the
	// Machine's controller, a MachineSet): a Machine that finds no slot is
	// looked at again after PollInterval. 0: uncapped.
	MaxConcurrentCreatesPerProvider, MaxConcurrentCreatesPerOwner int
	// MoreMachines, if set, returns the Machines another controller of
	// this process serves through the same providers — the Cluster API
	// controller's WasmMachines, as their providers see them
	// (infrastructure.MachineReconciler.Machines) — so that
	// SetMetricsForMachines hands each provider all of its machines in
	// one list.
	MoreMachines func(ctx context.Context) []clusterv1alpha1.Machine
	// ShutdownTimeout is how long in-flight reconciles (and their provider
	// calls) may run after the context is cancelled before their calls are
	// cancelled too (default 30s).
	ShutdownTimeout time.Duration
	// RateLimiter paces retries of failing Machines (default: per-item
	// exponential backoff 500ms..5m combined with an overall 10 qps/100
	// burst bucket, like client-go's default controller limiter).
	RateLimiter workqueue.TypedRateLimiter[string]
	// Registerer receives the controller's metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Recorder records Events on Machines (nil: none). A Machine whose
	// cloudProvider names no provider of Providers gets a Warning Event
	// with reason ReasonProviderNotFound at each retry (the recorder's
	// correlator folds repeats into one Event with a count).
	Recorder record.EventRecorder
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// OnLeadershipChange, if set, is called with true when Run starts
	// (under a manager with leader election: when this replica starts
	// leading) and with false when Run returns, after IsLeader changed.
	// It must not block. Work that runs on every replica but acts only on
	// the leader (a WasmProvider reconciler writing status) uses it to
	// catch up at once.
	OnLeadershipChange func(leading bool)
	// Clock times the requeues (PollInterval, the retry and deletion
	// backoffs, a provider's retry hint), the MetricsInterval ticker and
	// the ShutdownTimeout grace (default: the real clock). Tests step a
	// fake one instead of sleeping. The informers' resync and the leader
	// election keep client-go's real clock.
	Clock clock.WithTicker
}

// KubeClient is what the controller asks of a Kubernetes client: core/v1
// (PersistentVolumes) and coordination/v1 (the leader election Lease).
// Every client-go clientset satisfies it; asking for no more lets a test
// hand it a fake of these two groups (internal/testing/kubefake) instead
// of client-go's fake of all of them.
type KubeClient interface {
	CoreV1() corev1client.CoreV1Interface
	CoordinationV1() coordinationv1client.CoordinationV1Interface
}

// Controller reconciles Machines. Create it with New and start it once,
// with Run or in a manager (SetupWithManager, NewManager).
type Controller struct {
	opts     Options
	log      *slog.Logger
	informer cache.SharedIndexInformer
	pvInf    cache.SharedIndexInformer
	pvLister listerscorev1.PersistentVolumeLister
	queue    workers.Queue
	metrics  *metrics
	// deleteBackoff paces Cleanup calls of deletions in progress.
	deleteBackoff workqueue.TypedRateLimiter[string]
	// caps are the Create caps.
	caps    *createcap.Caps
	started atomic.Bool
	// leading while Run runs (see IsLeader).
	leading atomic.Bool
}

// New validates opts and builds the controller's informers and queue.
func New(opts Options) (*Controller, error) {
	if opts.Machines == nil || opts.Providers == nil {
		return nil, errors.New("controller: Options.Machines and Options.Providers are required")
	}
	if opts.Userdata == nil {
		opts.Userdata = PlaceholderUserdata
	}
	if opts.Workers <= 0 {
		opts.Workers = 5
	}
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = 10 * time.Minute
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 5 * time.Second
	}
	if opts.MaxDeletePollInterval <= 0 {
		opts.MaxDeletePollInterval = 5 * time.Minute
	}
	if opts.MaxDeletePollInterval < opts.PollInterval {
		opts.MaxDeletePollInterval = opts.PollInterval
	}
	if opts.MetricsInterval == 0 {
		opts.MetricsInterval = 10 * time.Minute
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 30 * time.Second
	}
	if opts.RateLimiter == nil {
		opts.RateLimiter = DefaultRateLimiter()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	c := &Controller{opts: opts, log: opts.Logger,
		deleteBackoff: newDeleteBackoff(opts.PollInterval, opts.MaxDeletePollInterval),
		caps:          createcap.New(opts.MaxConcurrentCreatesPerProvider, opts.MaxConcurrentCreatesPerOwner)}
	mc, ns := opts.Machines, opts.Namespace
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return mc.List(ctx, ns, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return mc.Watch(ctx, ns, o)
		},
	}
	// A MachineClient that cannot stream a watch-list (a test fake) says so
	// with IsWatchListSemanticsUnSupported, and the reflector lists instead.
	c.informer = cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, mc),
		&clusterv1alpha1.Machine{}, opts.ResyncPeriod,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	c.queue = workers.NewQueue("machines", opts.Clock)
	if opts.Kube != nil {
		pvs := opts.Kube.CoreV1().PersistentVolumes()
		// As client-go's generated informer does, less the clientset of
		// every API group it would take; a client that cannot stream a
		// watch-list (a fake) says so and the reflector lists instead.
		c.pvInf = cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return pvs.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return pvs.Watch(ctx, o)
			},
		}, opts.Kube), &corev1.PersistentVolume{}, opts.ResyncPeriod, cache.Indexers{})
		c.pvLister = listerscorev1.NewPersistentVolumeLister(c.pvInf.GetIndexer())
	}
	c.metrics = newMetrics(c)
	if opts.Registerer != nil {
		if err := c.metrics.register(opts.Registerer); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// DefaultRateLimiter is the default Options.RateLimiter.
func DefaultRateLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](500*time.Millisecond, 5*time.Minute),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// HasSynced reports whether the Machine informer has synced.
func (c *Controller) HasSynced() bool { return c.informer.HasSynced() }

// Run starts the informers and the workers and blocks until ctx is
// cancelled. It then stops taking new work, lets reconciles in flight
// finish — their provider calls keep running for up to ShutdownTimeout —
// and returns. Run may be called once.
//
// The workers are controller-runtime's: a controller whose event source
// is the Machine informer and whose queue is the controller's own (on
// Options.Clock). The retries are paced here (Options.RateLimiter, a
// provider's retry hint), not by returning errors to controller-runtime;
// see RATIONALE.md. A controller that fails to start ends Run at once.
func (c *Controller) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("controller: Run called twice")
	}
	defer c.queue.ShutDown()
	// Run runs while this replica leads (a manager with leader election
	// starts it once elected), and leads until it returned: after the
	// reconciles in flight finished.
	c.setLeading(true)
	defer c.setLeading(false)

	// Informers outlive ctx until the workers are done: a Delete in flight
	// may still list PersistentVolumes.
	infCtx, stopInformers := context.WithCancel(context.WithoutCancel(ctx))
	var informers sync.WaitGroup
	defer func() {
		stopInformers()
		informers.Wait()
	}()
	informers.Go(func() { c.informer.RunWithContext(infCtx) })
	synced := []cache.InformerSynced{c.informer.HasSynced}
	if c.pvInf != nil {
		informers.Go(func() { c.pvInf.RunWithContext(infCtx) })
		synced = append(synced, c.pvInf.HasSynced)
	}
	c.log.Info("controller starting", "workers", c.opts.Workers, "namespace", c.opts.Namespace)
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("controller: caches did not sync: %w", context.Cause(ctx))
	}

	// Provider calls run on callCtx: not cancelled with ctx, so that an
	// in-flight Create is not torn down half-way, but cancelled once the
	// shutdown grace period has passed.
	callCtx, cancelCalls := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelCalls()
	ctrl, err := workers.New("machine", c.queue, c.opts.Workers, c.log,
		reconcile.Func(func(stop context.Context, req reconcile.Request) (reconcile.Result, error) {
			return c.process(stop, callCtx, req), nil
		}))
	if err != nil {
		return err
	}
	if err := ctrl.Watch(&source.Informer{
		Informer: c.informer, Handler: enqueueMachine{poll: c.opts.PollInterval},
	}); err != nil {
		return fmt.Errorf("controller: watching Machines: %w", err)
	}
	// runCtx ends with ctx, or when the controller could not start (then
	// the metrics loop stops with it, and Run returns the error).
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var running sync.WaitGroup
	var startErr error
	running.Go(func() {
		startErr = ctrl.Start(runCtx)
		stop()
	})
	// The providers' own metrics are refreshed by the running (leading)
	// controller only: a standby replica does not call providers.
	running.Go(func() { c.runProviderMetrics(runCtx, callCtx) })
	c.metrics.workers.Set(float64(c.opts.Workers))
	c.log.Info("controller started")

	<-runCtx.Done()
	c.log.Info("controller stopping: waiting for reconciles in flight", "grace", c.opts.ShutdownTimeout)
	done := make(chan struct{})
	go func() { running.Wait(); close(done) }()
	select {
	case <-done:
	case <-c.opts.Clock.After(c.opts.ShutdownTimeout):
		c.log.Warn("shutdown grace period passed: cancelling provider calls in flight")
		cancelCalls()
		<-done
	}
	c.metrics.workers.Set(0)
	c.log.Info("controller stopped")
	if startErr != nil {
		return fmt.Errorf("controller: %w", startErr)
	}
	return nil
}

// process reconciles one Machine and says when to look at it again. stop
// is the controller's context: a key taken after it is done is left for
// the next leader or the next start. The provider calls run on callCtx.
func (c *Controller) process(stop, callCtx context.Context, req reconcile.Request) reconcile.Result {
	if stop.Err() != nil {
		return reconcile.Result{}
	}
	key := req.String()
	start := time.Now()
	res, err := c.reconcile(callCtx, key)
	c.metrics.reconcileDuration.Observe(time.Since(start).Seconds())
	switch {
	case err != nil:
		c.metrics.reconciles.WithLabelValues("error").Inc()
		c.metrics.errors.Inc()
		if d, ok := retryAfter(err); ok {
			c.log.Info("reconcile failed, retrying after the provider's hint", "machine", key, "after", d, "err", err)
			return reconcile.Result{RequeueAfter: d}
		}
		d := c.opts.RateLimiter.When(key)
		c.log.Info("reconcile failed, retrying with backoff", "machine", key,
			"retries", c.opts.RateLimiter.NumRequeues(key), "after", d, "err", err)
		return reconcile.Result{RequeueAfter: d}
	case res.terminal:
		c.metrics.reconciles.WithLabelValues("terminal").Inc()
	case res.requeueAfter > 0:
		c.metrics.reconciles.WithLabelValues("requeue").Inc()
		c.opts.RateLimiter.Forget(key)
		return reconcile.Result{RequeueAfter: res.requeueAfter}
	default:
		c.metrics.reconciles.WithLabelValues("success").Inc()
	}
	c.opts.RateLimiter.Forget(key)
	return reconcile.Result{}
}
