// The work queue: Run's informer and workers, and what a reconcile's result
// does to its key (forget, poll again, retry with backoff).

package wasmprovider

import (
	"context"
	"errors"
	"fmt"
	"sync"

	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/controller/internal/kubeclient"
	"github.com/wasmprov/wasmprov/controller/internal/workers"

	corev1 "k8s.io/api/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Run reconciles until ctx is cancelled. It returns once its workers have
// stopped; providers it loaded stay loaded (the registry's Close unloads
// them).
//
// The workers are controller-runtime's, fed by the WasmProvider informer
// and by the reconciler itself (a cloud provider name changing hands
// queues its other claimants); see controller/internal/workers.
func (r *Reconciler) Run(ctx context.Context) error {
	if !r.started.CompareAndSwap(false, true) {
		return errors.New("wasmprovider: Run called twice")
	}
	r.recorder = r.opts.Recorder
	if r.recorder == nil {
		b := record.NewBroadcaster(record.WithContext(ctx))
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: r.opts.Kube.CoreV1().Events("")})
		defer b.Shutdown()
		r.recorder = b.NewRecorder(kubeclient.Scheme, corev1.EventSource{Component: "wasmprov-controller"})
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	// The queue shuts down before the informer is waited for (defers run
	// last in, first out); controller-runtime's controller shuts it down
	// too once started.
	defer r.queue.ShutDown()
	wg.Go(func() { r.informer.RunWithContext(ctx) })
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

	ctrl, err := workers.New("wasmprovider", r.queue, r.opts.Workers, r.log,
		reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return r.process(ctx, req.Name), nil
		}))
	if err != nil {
		return err
	}
	if err := ctrl.Watch(&source.Informer{
		Informer: r.informer, Handler: &handler.EnqueueRequestForObject{},
		Predicates: []predicate.Predicate{predicate.Funcs{UpdateFunc: changedBeyondStatus}},
	}); err != nil {
		return fmt.Errorf("wasmprovider: watching WasmProviders: %w", err)
	}
	if err := ctrl.Start(ctx); err != nil {
		return fmt.Errorf("wasmprovider: %w", err)
	}
	return nil
}

// SetupWithManager adds the reconciler to mgr as a runnable that every
// replica runs, leader or not: a standby keeps its WasmProviders loaded,
// warm for a takeover, and writes status only while Options.IsLeader says
// so. The manager stops it before the leader's Machine controller and
// releases the Lease after both, so no status is written once another
// replica may lead.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	return mgr.Add(everyReplica(r.Run))
}

// everyReplica is a manager runnable that does not wait for leader
// election.
type everyReplica func(context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }

func (everyReplica) NeedLeaderElection() bool { return false }

// changedBeyondStatus lets through the updates that change what a
// reconcile reads. A status-only update (ours, mostly) changes nothing to
// do; queueing it would also retry a refused spec at once, around its
// backoff.
func changedBeyondStatus(e event.UpdateEvent) bool {
	ow, ok1 := e.ObjectOld.(*wasmprovv1alpha1.WasmProvider)
	nw, ok2 := e.ObjectNew.(*wasmprovv1alpha1.WasmProvider)
	return !ok1 || !ok2 || ow.Generation != nw.Generation || ow.Generation == 0 ||
		!ow.DeletionTimestamp.Equal(nw.DeletionTimestamp) || specChanged(ow, nw)
}

// HasSynced reports whether the WasmProvider informer has synced and every
// WasmProvider seen at that point was reconciled once.
func (r *Reconciler) HasSynced() bool { return r.synced.Load() }

// LeadershipChanged tells the Reconciler that IsLeader may have changed:
// a new leader re-reconciles every WasmProvider so that status converges.
func (r *Reconciler) LeadershipChanged() {
	for _, k := range r.informer.GetStore().ListKeys() {
		r.enqueue(k)
	}
}

// process reconciles the WasmProvider name and says when to look at it
// again: after the retry backoff if it was refused or failed, after
// PollInterval otherwise, never once it is gone.
func (r *Reconciler) process(ctx context.Context, name string) reconcile.Result {
	result, err := r.reconcile(ctx, name)
	r.metrics.reconciles.WithLabelValues(result).Inc()
	var next reconcile.Result
	switch {
	case ctx.Err() != nil:
		// Shutting down: what failed was cut short, not refused.
	case err != nil:
		if result == resultError {
			r.log.Error("wasmprovider: reconcile failed", "wasmprovider", name, "err", err)
		} else {
			r.log.Debug("wasmprovider: version refused; retrying with backoff", "wasmprovider", name, "err", err)
		}
		next.RequeueAfter = r.retry.When(name)
	case result == resultDeleted:
		r.retry.Forget(name)
	default:
		r.retry.Forget(name)
		next.RequeueAfter = r.opts.PollInterval
	}
	r.mu.Lock()
	if r.pending != nil {
		delete(r.pending, name)
		if len(r.pending) == 0 {
			r.synced.Store(true)
		}
	}
	r.mu.Unlock()
	return next
}
