package infrastructure

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	infrav1 "github.com/wasmprov/wasmprov/apis/infrastructure/v1alpha1"
	"github.com/wasmprov/wasmprov/controller/internal/createcap"
	"github.com/wasmprov/wasmprov/provider"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ProviderSource finds the provider a providerSpec's cloudProvider
// names: runtime/registry's Registry (a directory's modules and
// WasmProviders) and the Machine controller's MapSource both are one.
type ProviderSource interface {
	Provider(name string) (provider.Interface, error)
}

// MachineOptions configures a MachineReconciler. Client, APIReader and
// Providers are required.
type MachineOptions struct {
	// Client reads WasmMachines and Cluster API's Machines and Clusters
	// (the manager's cache) and writes WasmMachines: mgr.GetClient().
	Client client.Client
	// APIReader reads what must not be cached: bootstrap data Secrets,
	// and a WasmMachine afresh for the MachineUpdater. mgr.GetAPIReader().
	APIReader client.Reader
	// Providers resolves providerSpec.cloudProvider.
	Providers ProviderSource
	// Recorder records Events on WasmMachines (nil: none).
	Recorder record.EventRecorder
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Workers is the number of WasmMachines reconciled at once (default 5).
	Workers int
	// PollInterval is how soon a WasmMachine whose instance is being
	// created is looked at again (default 5s).
	PollInterval time.Duration
	// MaxDeletePollInterval caps the backoff between Cleanup calls of a
	// deletion in progress, which starts at PollInterval (default 5m).
	MaxDeletePollInterval time.Duration
	// ShutdownTimeout is how long provider calls in flight may run after
	// the manager stops before they are cancelled (default 30s): a Create
	// is not torn down half-way by a rollout of the controller.
	ShutdownTimeout time.Duration
	// RateLimiter paces the retries of transient errors, requeued with
	// RequeueAfter rather than returned to controller-runtime (default:
	// per WasmMachine exponential backoff from 500ms to 5m).
	RateLimiter workqueue.TypedRateLimiter[reconcile.Request]
	// MaxConcurrentCreatesPerProvider and MaxConcurrentCreatesPerOwner cap
	// the Creates running at once, per provider and per owner of the
	// Cluster API Machine (its MachineSet): a WasmMachine that finds no
	// slot waits (Ready=False, WaitingForCreateSlot) and is looked at
	// again after PollInterval. 0: uncapped.
	MaxConcurrentCreatesPerProvider, MaxConcurrentCreatesPerOwner int
	// Registerer receives the reconciler's metrics (nil: none).
	Registerer prometheus.Registerer
	// Clock times the ShutdownTimeout grace (default: the real clock).
	Clock clock.WithDelayedExecution
}

// MachineReconciler reconciles WasmMachines: Cluster API's InfraMachine.
type MachineReconciler struct {
	opts          MachineOptions
	caps          *createcap.Caps
	log           *slog.Logger
	deleteBackoff workqueue.TypedRateLimiter[reconcile.Request]
	metrics       *metrics
}

// NewMachineReconciler validates opts and returns the reconciler; add it
// to a manager with SetupWithManager.
func NewMachineReconciler(opts MachineOptions) (*MachineReconciler, error) {
	if opts.Client == nil || opts.APIReader == nil || opts.Providers == nil {
		return nil, errors.New("infrastructure: MachineOptions.Client, APIReader and Providers are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Workers <= 0 {
		opts.Workers = 5
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 5 * time.Second
	}
	if opts.MaxDeletePollInterval < opts.PollInterval {
		opts.MaxDeletePollInterval = max(5*time.Minute, opts.PollInterval)
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 30 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.RateLimiter == nil {
		opts.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](500*time.Millisecond, 5*time.Minute)
	}
	r := &MachineReconciler{opts: opts, log: opts.Logger,
		caps:          createcap.New(opts.MaxConcurrentCreatesPerProvider, opts.MaxConcurrentCreatesPerOwner),
		deleteBackoff: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](opts.PollInterval, opts.MaxDeletePollInterval)}
	r.metrics = newMetrics(r)
	if opts.Registerer != nil {
		if err := r.metrics.register(opts.Registerer); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// SetupWithManager adds the reconciler to mgr: WasmMachines, and the
// Cluster API Machines and Clusters they depend on (a Machine's bootstrap
// data becoming ready, a Cluster unpaused or its infrastructure
// provisioned). It fails, naming the fix, when Cluster API is not
// installed.
func (r *MachineReconciler) SetupWithManager(mgr manager.Manager) error {
	if err := clusterAPIServed(mgr); err != nil {
		return err
	}
	return builder.ControllerManagedBy(mgr).
		Named("wasmmachine").
		For(&infrav1.WasmMachine{}, builder.WithPredicates(wasmMachineChanged)).
		Watches(newUnstructured(machineGVK), handler.EnqueueRequestsFromMapFunc(machineToWasmMachine),
			builder.WithPredicates(machineChanged)).
		Watches(newUnstructured(clusterGVK), handler.EnqueueRequestsFromMapFunc(r.clusterToWasmMachines),
			builder.WithPredicates(clusterChanged)).
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: r.opts.Workers}).
		Complete(r)
}

// clusterAPIServed checks that the API server serves Cluster API's
// Machines and Clusters at the contract version read here.
func clusterAPIServed(mgr manager.Manager) error {
	for _, gvk := range []schema.GroupVersionKind{machineGVK, clusterGVK} {
		if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return fmt.Errorf("infrastructure: the API server does not serve Cluster API's %s %s (%w): install Cluster API's core components (clusterctl init) first", gvk.Kind, gvk.GroupVersion(), err)
		}
	}
	return nil
}

func machineToWasmMachine(_ context.Context, o client.Object) []reconcile.Request {
	u, ok := o.(interface{ UnstructuredContent() map[string]any })
	if !ok {
		return nil
	}
	m := newUnstructured(machineGVK)
	m.SetUnstructuredContent(u.UnstructuredContent())
	if key, ok := infrastructureRef(m); ok {
		return []reconcile.Request{{NamespacedName: key}}
	}
	return nil
}

func (r *MachineReconciler) clusterToWasmMachines(ctx context.Context, o client.Object) []reconcile.Request {
	var list infrav1.WasmMachineList
	if err := r.opts.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()),
		client.MatchingLabels{ClusterNameLabel: o.GetName()}); err != nil {
		r.log.Warn("listing the WasmMachines of a Cluster", "cluster", o.GetNamespace()+"/"+o.GetName(), "err", err)
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// callContext is the context of a reconcile's provider calls and writes:
// not cancelled when the manager stops (ctx), so that a Create in flight
// is not torn down half-way, but ShutdownTimeout later.
func (r *MachineReconciler) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	call, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { r.opts.Clock.AfterFunc(r.opts.ShutdownTimeout, cancel) })
	return call, func() { stop(); cancel() }
}

// Reconcile implements reconcile.Reconciler, as Cluster API's contract
// describes an InfraMachine's reconcile: pause; deletion (Cleanup until
// done, then the finalizer goes); otherwise wait for the owning Machine,
// its Cluster's infrastructure and its bootstrap data, then AddDefaults,
// Validate and Create, and Get until the instance runs. The status is
// written once, at the end.
func (r *MachineReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	call, cancel := r.callContext(ctx)
	defer cancel()
	res, err := r.reconcileKey(call, req)
	if err == nil {
		r.opts.RateLimiter.Forget(req)
		if res.RequeueAfter > 0 {
			r.metrics.reconciles.WithLabelValues("requeue").Inc()
		} else {
			r.metrics.reconciles.WithLabelValues("success").Inc()
		}
		return res, nil
	}
	r.metrics.reconciles.WithLabelValues("error").Inc()
	// Retries are paced here, as the Machine controller's are (RATIONALE.md):
	// a transient failure is expected and logged at info level, not as
	// controller-runtime's "Reconciler error".
	d := r.opts.RateLimiter.When(req)
	r.log.Info("reconcile failed, retrying with backoff", "wasmMachine", req.String(),
		"retries", r.opts.RateLimiter.NumRequeues(req), "after", d, "err", err)
	return reconcile.Result{RequeueAfter: d}, nil
}

func (r *MachineReconciler) reconcileKey(ctx context.Context, req reconcile.Request) (res reconcile.Result, err error) {
	wm := &infrav1.WasmMachine{}
	if err := r.opts.Client.Get(ctx, req.NamespacedName, wm); err != nil {
		if apierrors.IsNotFound(err) {
			r.deleteBackoff.Forget(req)
			r.metrics.forget(req.String())
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	s := &scope{wm: wm, before: wm.DeepCopy(), log: r.log.With("wasmMachine", req.String()), req: req}
	defer func() {
		if perr := r.patchStatus(ctx, s); perr != nil && err == nil {
			err = perr
		}
	}()
	return r.reconcile(ctx, s)
}
