// Package kubefake is a client-go fake clientset cut down to the two API
// groups wasmprov's runtime and controllers talk to: core/v1 (Secrets,
// ConfigMaps, PersistentVolumes, Events) and coordination/v1 (leader
// election Leases).
//
// Why not k8s.io/client-go/kubernetes/fake? It imports the typed client of
// every API group and, through its field-managed tracker, every apply
// configuration: about 270 packages that a test of the runtime would
// compile (twice: plain and under the race detector, a third time
// instrumented for fuzzing) to read one Secret. This Clientset serves the
// same object tracker through the same reactors, so a test written against
// the full fake behaves the same here; objects of other groups are refused
// by the tracker's scheme lookup at Add.
package kubefake

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	fakecoordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1/fake"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	fakecorev1 "k8s.io/client-go/kubernetes/typed/core/v1/fake"
	clienttesting "k8s.io/client-go/testing"
)

// Clientset answers CoreV1 and CoordinationV1 from an in-memory object
// tracker. The embedded Fake records actions and takes extra reactors
// (PrependReactor) as client-go's fake does.
type Clientset struct {
	clienttesting.Fake
	tracker clienttesting.ObjectTracker
}

// New returns a Clientset holding objs. It panics on an object the tracker
// refuses (a type outside the client-go scheme, a duplicate): a test's
// fixture is wrong, not its subject.
func New(objs ...runtime.Object) *Clientset {
	o := clienttesting.NewObjectTracker(scheme.Scheme, scheme.Codecs.UniversalDecoder())
	for _, obj := range objs {
		if err := o.Add(obj); err != nil {
			panic(fmt.Sprintf("kubefake: adding fixture object: %v", err))
		}
	}
	return over(o)
}

// Replica is another Clientset over c's objects: what one replica of a
// controller does is recorded (Actions) apart from what another does,
// while both see the same API state.
func (c *Clientset) Replica() *Clientset { return over(c.tracker) }

func over(o clienttesting.ObjectTracker) *Clientset {
	c := &Clientset{tracker: o}
	c.AddReactor("*", "*", clienttesting.ObjectReaction(o))
	c.AddWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		w, err := o.Watch(a.GetResource(), a.GetNamespace())
		if err != nil {
			return false, nil, err
		}
		return true, w, nil
	})
	return c
}

// IsWatchListSemanticsUnSupported tells a reflector handed this client
// (cache.ToListWatcherWithWatchListSemantics) to list and then watch: the
// tracker's watch sends no initial events, so a watch-list would never
// sync. client-go's fake says the same.
func (c *Clientset) IsWatchListSemanticsUnSupported() bool { return true }

// Tracker is the object store behind the reactors.
func (c *Clientset) Tracker() clienttesting.ObjectTracker { return c.tracker }

// CoreV1 is the core/v1 client.
func (c *Clientset) CoreV1() corev1.CoreV1Interface { return &fakecorev1.FakeCoreV1{Fake: &c.Fake} }

// CoordinationV1 is the coordination/v1 client (Leases).
func (c *Clientset) CoordinationV1() coordinationv1.CoordinationV1Interface {
	return &fakecoordinationv1.FakeCoordinationV1{Fake: &c.Fake}
}
