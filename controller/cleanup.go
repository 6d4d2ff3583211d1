package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/provider"

	"k8s.io/client-go/util/workqueue"
)

// newDeleteBackoff is the per-Machine pace of Cleanup calls while a
// deletion is in progress: PollInterval, doubling at every unfinished
// answer, capped at max.
func newDeleteBackoff(poll, max time.Duration) workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[string](poll, max)
}

// cleanup deletes a Machine's instance: the finalizer goes once Cleanup
// says done (nothing left, including when there was nothing to delete).
// Not done: the deletion started and is not finished; the finalizer stays
// and Cleanup is called again later, with backoff. An error is retried as
// any reconcile error is (after its retry hint, if it carries one); a
// terminal one goes into the Machine's status.
func (c *Controller) cleanup(ctx context.Context, log logger, m *clusterv1alpha1.Machine,
	prov provider.Interface, data *provider.Data) (result, error) {
	key := keyOf(m)
	done, err := prov.Cleanup(ctx, m, data)
	if err != nil {
		return c.fail(ctx, m, fmt.Errorf("deleting instance: %w", err))
	}
	if !done {
		// Backoff, not a fixed poll: a deletion the cloud takes an hour
		// over (or never finishes) costs a call every few minutes, not
		// every PollInterval, and the finalizer stays.
		after := c.deleteBackoff.When(key)
		log.Info("deletion in progress", "attempt", c.deleteBackoff.NumRequeues(key), "next", after)
		return result{requeueAfter: after}, nil
	}
	if _, err := c.updateMachine(ctx, m, func(m *clusterv1alpha1.Machine) {
		m.Finalizers = slices.DeleteFunc(m.Finalizers, func(f string) bool { return f == FinalizerDeleteInstance })
	}); err != nil {
		return result{}, fmt.Errorf("removing finalizer: %w", err)
	}
	c.deleteBackoff.Forget(key)
	c.metrics.deletes.Inc()
	c.metrics.forget(key)
	log.Info("instance deleted, finalizer removed")
	return result{}, nil
}
