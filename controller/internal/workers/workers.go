// Package workers builds the worker loop both controllers run on:
// controller-runtime's controller (its workers, panic recovery and event
// sources) over a queue the controller makes itself, so that the
// controller can add keys to it from outside a reconcile and time its
// delays with an injected clock.
package workers

import (
	"fmt"
	"log/slog"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Queue is the work queue of a controller: reconcile.Requests, delays on
// the controller's clock.
type Queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// NewQueue returns a queue named name whose delays (a reconcile's
// RequeueAfter) run on clk. Its rate limiter only paces what
// controller-runtime itself retries — a reconciler that panicked: the
// controllers here pace their retries with limiters of their own and
// return them as RequeueAfter.
func NewQueue(name string, clk clock.WithTicker) Queue {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](),
		workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name, Clock: clk})
}

// New returns an unstarted controller-runtime controller running n
// workers of r over q. name labels its log lines and its
// controller-runtime metrics; it need not be unique in the process (a
// test, or an embedder, may run several controllers of one kind).
func New(name string, q Queue, n int, log *slog.Logger, r reconcile.Reconciler) (crcontroller.TypedController[reconcile.Request], error) {
	c, err := crcontroller.NewTypedUnmanaged(name, crcontroller.TypedOptions[reconcile.Request]{
		Reconciler:              r,
		MaxConcurrentReconciles: n,
		NewQueue: func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
			return q
		},
		UsePriorityQueue:   ptr.To(false),
		SkipNameValidation: ptr.To(true),
		Logger:             logr.FromSlogHandler(log.Handler()),
	})
	if err != nil {
		return nil, fmt.Errorf("%s controller: %w", name, err)
	}
	return c, nil
}
