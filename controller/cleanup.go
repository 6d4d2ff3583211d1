package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/provider"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	data, latest := trackWrites(data, m)
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
	// From the Machine as the provider last wrote it: machine-controller's
	// providers remove their own finalizers through the updater during
	// Cleanup, and a write from the copy read before the call would be
	// refused as a conflict, then read and written again, every time.
	_, err = c.updateMachine(ctx, latest(), func(m *clusterv1alpha1.Machine) {
		m.Finalizers = slices.DeleteFunc(m.Finalizers, func(f string) bool { return f == FinalizerDeleteInstance })
	})
	gone := apierrors.IsNotFound(err)
	if err != nil && !gone {
		return result{}, fmt.Errorf("removing finalizer: %w", err)
	}
	c.deleteBackoff.Forget(key)
	c.metrics.forget(key)
	if gone {
		// A reconcile of a stale cached copy: an earlier one removed the
		// finalizer, and the Machine went before the cache heard of it.
		// The instance was counted and logged then.
		log.Debug("machine already gone, nothing to remove")
		return result{}, nil
	}
	c.metrics.deletes.Inc()
	log.Info("instance deleted, finalizer removed")
	return result{}, nil
}

// trackWrites returns data with an updater that remembers the last copy of
// m it wrote, and a func that returns that copy (m if none).
func trackWrites(data *provider.Data, m *clusterv1alpha1.Machine) (*provider.Data, func() *clusterv1alpha1.Machine) {
	var mu sync.Mutex
	last := m
	if data == nil || data.Update == nil {
		return data, func() *clusterv1alpha1.Machine { return last }
	}
	tracked := *data
	tracked.Update = func(target *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
		out, err := data.Update(target, modify)
		if err == nil && out != nil && out.UID == m.UID {
			mu.Lock()
			last = out
			mu.Unlock()
		}
		return out, err
	}
	return &tracked, func() *clusterv1alpha1.Machine {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}
