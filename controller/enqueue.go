package controller

import (
	"context"
	"hash/fnv"
	"slices"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// settledSpread is how long a new leader takes to look at the Machines its
// first list found settled, one after another, each at its own offset.
const settledSpread = time.Minute

// enqueueMachine enqueues every Machine event at once, but for the
// Machines a new leader's first list finds settled (provisioned, not being
// deleted): those wait PollInterval plus an offset of up to settledSpread.
//
// Why: the informer starts with leadership, so every new leader lists all
// Machines and would reconcile them in the order listed, a provider Get
// each. With 1000 Machines and the leader replaced every 30 s (the scale
// harness's kill scenario), a Machine still waiting for its server sat
// behind hundreds of settled ones at every takeover, and the ramp's last
// tenth took 4.5 minutes (docs/SCALE.md). The settled ones are looked at
// within the minute, which is what they would have waited behind the
// others anyway.
type enqueueMachine struct{ poll time.Duration }

var _ handler.TypedEventHandler[client.Object, reconcile.Request] = enqueueMachine{}

func (h enqueueMachine) Create(_ context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	req := requestOf(e.Object)
	if m, ok := e.Object.(*clusterv1alpha1.Machine); ok && e.IsInInitialList && settled(m) {
		q.AddAfter(req, h.poll+offset(req.String(), settledSpread))
		return
	}
	q.Add(req)
}

func (enqueueMachine) Update(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	q.Add(requestOf(e.ObjectNew))
}

func (enqueueMachine) Delete(_ context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	q.Add(requestOf(e.Object))
}

func (enqueueMachine) Generic(_ context.Context, e event.TypedGenericEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	q.Add(requestOf(e.Object))
}

func requestOf(o client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}
}

// settled: the controller has nothing left to do for m but look at it:
// its instance was made and reported (providerID, addresses), it carries
// the finalizer, no error is recorded, and it is not being deleted.
func settled(m *clusterv1alpha1.Machine) bool {
	return m.DeletionTimestamp == nil && m.Spec.ProviderID != nil && len(m.Status.Addresses) > 0 &&
		m.Status.ErrorReason == nil && slices.Contains(m.Finalizers, FinalizerDeleteInstance)
}

// offset spreads keys evenly over [0, spread), the same key always at the
// same place.
func offset(key string, spread time.Duration) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(key))
	return time.Duration(h.Sum64() % uint64(spread))
}
