package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud"

	"k8s.io/client-go/util/workqueue"
)

// Cleaner is the deletion of machine-controller's current provider
// contract. A provider from the ProviderSource that implements it is
// deleted with Cleanup alone; one that does not keeps the seed's path,
// Delete and then Get until the instance is not found.
type Cleaner interface {
	// Cleanup deletes machine's instance. done is true once nothing is
	// left (including when there was nothing to delete); false means the
	// deletion started and is not finished: the controller keeps the
	// finalizer and calls Cleanup again later, with backoff. An error is
	// retried as any reconcile error is (after its retry hint, if it
	// carries one); a terminal one goes into the Machine's status.
	Cleanup(ctx context.Context, machine *clusterv1alpha1.Machine, data *cloud.MachineCreateDeleteData) (done bool, err error)
}

// newDeleteBackoff is the per-Machine pace of Cleanup calls while a
// deletion is in progress: PollInterval, doubling at every unfinished
// answer, capped at max.
func newDeleteBackoff(poll, max time.Duration) workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[string](poll, max)
}

// cleanup is reconcileDelete for a Cleaner: no Get, the finalizer goes once
// Cleanup says done.
func (c *Controller) cleanup(ctx context.Context, log logger, m *clusterv1alpha1.Machine,
	cl Cleaner, data *cloud.MachineCreateDeleteData) (result, error) {
	key := keyOf(m)
	done, err := cl.Cleanup(ctx, m, data)
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
