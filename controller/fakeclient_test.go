package controller

import (
	"context"
	"strconv"
	"sync"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// fakeMachines is an in-memory MachineClient with the API server semantics
// the controller relies on: resourceVersion conflicts, a status
// subresource, finalizers holding back deletion, and watches.
type fakeMachines struct {
	mu       sync.Mutex
	rv       int
	objs     map[string]*clusterv1alpha1.Machine
	watchers []*watch.FakeWatcher
	// events is every change, for a Watch from a resourceVersion to replay
	// what happened after it (as the API server does): without it, a
	// Create between the informer's List and its Watch was lost.
	events []fakeEvent
	// conflictNext makes the next N Update/UpdateStatus calls fail with a
	// conflict, as if another writer got in first.
	conflictNext int
	updates      int
	// conflicts counts the writes refused as conflicts.
	conflicts int
}

func newFakeMachines() *fakeMachines {
	return &fakeMachines{objs: map[string]*clusterv1alpha1.Machine{}}
}

var machineGR = clusterv1alpha1.Resource("machines")

type fakeEvent struct {
	typ watch.EventType
	obj *clusterv1alpha1.Machine
	rv  int
}

func (f *fakeMachines) notify(t watch.EventType, m *clusterv1alpha1.Machine) {
	f.events = append(f.events, fakeEvent{t, m.DeepCopy(), f.rv})
	for _, w := range f.watchers {
		if !w.IsStopped() {
			w.Action(t, m.DeepCopy())
		}
	}
}

// IsWatchListSemanticsUnSupported tells the reflector to list, then watch:
// this fake cannot stream a watch-list.
func (f *fakeMachines) IsWatchListSemanticsUnSupported() bool { return true }

func (f *fakeMachines) bump(m *clusterv1alpha1.Machine) {
	f.rv++
	m.ResourceVersion = strconv.Itoa(f.rv)
}

func (f *fakeMachines) Get(_ context.Context, ns, name string) (*clusterv1alpha1.Machine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.objs[ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(machineGR, name)
	}
	return m.DeepCopy(), nil
}

func (f *fakeMachines) List(_ context.Context, ns string, _ metav1.ListOptions) (*clusterv1alpha1.MachineList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := &clusterv1alpha1.MachineList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(f.rv)}}
	for _, m := range f.objs {
		if ns == "" || m.Namespace == ns {
			l.Items = append(l.Items, *m.DeepCopy())
		}
	}
	return l, nil
}

func (f *fakeMachines) Watch(_ context.Context, _ string, o metav1.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := watch.NewFakeWithChanSize(100, false)
	if from, err := strconv.Atoi(o.ResourceVersion); err == nil {
		for _, ev := range f.events {
			if ev.rv > from {
				w.Action(ev.typ, ev.obj.DeepCopy())
			}
		}
	}
	f.watchers = append(f.watchers, w)
	return w, nil
}

func (f *fakeMachines) Create(m *clusterv1alpha1.Machine) *clusterv1alpha1.Machine {
	f.mu.Lock()
	defer f.mu.Unlock()
	m = m.DeepCopy()
	if m.Namespace == "" {
		m.Namespace = "default"
	}
	m.UID = types.UID("uid-" + m.Name)
	m.Generation = 1
	m.CreationTimestamp = metav1.Now()
	f.bump(m)
	f.objs[m.Namespace+"/"+m.Name] = m
	f.notify(watch.Added, m)
	return m.DeepCopy()
}

func (f *fakeMachines) Delete(ns, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.objs[ns+"/"+name]
	if !ok {
		return
	}
	if len(m.Finalizers) == 0 {
		delete(f.objs, ns+"/"+name)
		f.rv++ // a deletion is a change after which a watch starts
		f.notify(watch.Deleted, m)
		return
	}
	if m.DeletionTimestamp == nil {
		now := metav1.NewTime(time.Now())
		m.DeletionTimestamp = &now
		f.bump(m)
		f.notify(watch.Modified, m)
	}
}

func (f *fakeMachines) write(m *clusterv1alpha1.Machine, status bool) (*clusterv1alpha1.Machine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates++
	key := m.Namespace + "/" + m.Name
	cur, ok := f.objs[key]
	if !ok {
		return nil, apierrors.NewNotFound(machineGR, m.Name)
	}
	if f.conflictNext > 0 || m.ResourceVersion != cur.ResourceVersion {
		f.conflicts++
		if f.conflictNext > 0 {
			f.conflictNext--
		}
		return nil, apierrors.NewConflict(machineGR, m.Name, nil)
	}
	next := cur.DeepCopy()
	if status {
		next.Status = *m.Status.DeepCopy()
	} else {
		st := next.Status
		gen := next.Generation
		dt := next.DeletionTimestamp
		next = m.DeepCopy()
		next.Status, next.DeletionTimestamp, next.UID, next.CreationTimestamp = st, dt, cur.UID, cur.CreationTimestamp
		next.Generation = gen
		if !equalSpec(cur, next) {
			next.Generation++
		}
	}
	f.bump(next)
	if next.DeletionTimestamp != nil && len(next.Finalizers) == 0 {
		delete(f.objs, key)
		f.notify(watch.Deleted, next)
		return next.DeepCopy(), nil
	}
	f.objs[key] = next
	f.notify(watch.Modified, next)
	return next.DeepCopy(), nil
}

func equalSpec(a, b *clusterv1alpha1.Machine) bool {
	return a.Spec.ProviderID == b.Spec.ProviderID ||
		(a.Spec.ProviderID != nil && b.Spec.ProviderID != nil && *a.Spec.ProviderID == *b.Spec.ProviderID)
}

func (f *fakeMachines) Update(_ context.Context, m *clusterv1alpha1.Machine) (*clusterv1alpha1.Machine, error) {
	return f.write(m, false)
}

func (f *fakeMachines) UpdateStatus(_ context.Context, m *clusterv1alpha1.Machine) (*clusterv1alpha1.Machine, error) {
	return f.write(m, true)
}

func (f *fakeMachines) get(ns, name string) (*clusterv1alpha1.Machine, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.objs[ns+"/"+name]
	if !ok {
		return nil, false
	}
	return m.DeepCopy(), true
}

// purge removes the Machine without telling the watchers, as when the
// API server deleted it and the informer's cache has not heard yet.
func (f *fakeMachines) purge(ns, name string) {
	f.mu.Lock()
	delete(f.objs, ns+"/"+name)
	f.mu.Unlock()
}

func (f *fakeMachines) conflictCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conflicts
}

func (f *fakeMachines) setConflicts(n int) {
	f.mu.Lock()
	f.conflictNext = n
	f.mu.Unlock()
}
