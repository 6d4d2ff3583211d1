// The work queue: Run's informer and workers, and what a reconcile's result
// does to its key (forget, poll again, retry with backoff).

package wasmprovider

import (
	"context"
	"errors"
	"sync"

	corev1 "k8s.io/api/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

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
