package controller

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wasmprov/wasmprov/provider"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// eventLog drains a FakeRecorder (whose Event blocks once its buffer is
// full) and keeps what it recorded.
type eventLog struct {
	mu     sync.Mutex
	events []string
	done   chan struct{}
}

func drainEvents(t *testing.T, r *record.FakeRecorder) *eventLog {
	l := &eventLog{done: make(chan struct{})}
	stop := make(chan struct{})
	go func() {
		defer close(l.done)
		for {
			select {
			case e := <-r.Events:
				l.mu.Lock()
				l.events = append(l.events, e)
				l.mu.Unlock()
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-l.done })
	return l
}

func (l *eventLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// switchableSource serves mem while on is set, and no provider otherwise,
// as a registry does before and after a module is loaded or unloaded.
type switchableSource struct {
	on  atomic.Bool
	mem provider.Interface
}

func (s *switchableSource) Provider(name string) (provider.Interface, error) {
	if name == "mem" && s.on.Load() {
		return s.mem, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownProvider, name)
}

// A Machine naming a provider that is not loaded gets a deterministic
// Warning Event, is retried with backoff, and is provisioned once the
// provider appears; while deleting, it keeps its finalizer (the instance
// may still exist) until the provider is back and says it is gone.
func TestProviderNotFoundEventAndRetry(t *testing.T) {
	rec := record.NewFakeRecorder(1000)
	src := &switchableSource{}
	h := newHarness(t, func(o *Options) {
		o.Recorder = rec
		src.mem = o.Providers.(*MapSource).m["mem"]
		o.Providers = src
	})
	log := drainEvents(t, rec)
	h.start()
	h.machines.Create(machine("early", "mem", `{"size":"s"}`))

	const want = `Warning ProviderNotFound cloud provider "mem" is not loaded; retrying`
	eventually(t, "ProviderNotFound events at several retries", func() bool {
		n := 0
		for _, e := range log.all() {
			if e == want {
				n++
			}
		}
		return n >= 3
	})
	for _, e := range log.all() {
		if e != want {
			t.Fatalf("event %q, want only %q", e, want)
		}
	}
	if n := testutil.ToFloat64(h.ctrl.metrics.reconciles.WithLabelValues("error")); n < 3 {
		t.Fatalf("%v failed reconciles, want retries", n)
	}
	if m, _ := h.machines.get("default", "early"); len(m.Finalizers) != 0 || m.Spec.ProviderID != nil {
		t.Fatalf("a Machine without a provider was touched: finalizers %v, providerID %v", m.Finalizers, m.Spec.ProviderID)
	}

	src.on.Store(true)
	eventually(t, "provisioned once the provider is loaded", func() bool {
		m, _ := h.machines.get("default", "early")
		return m.Spec.ProviderID != nil
	})

	// Unloaded again, then deleted: the finalizer stays through retries.
	src.on.Store(false)
	before := len(log.all())
	errorsBefore := testutil.ToFloat64(h.ctrl.metrics.reconciles.WithLabelValues("error"))
	h.machines.Delete("default", "early")
	eventually(t, "ProviderNotFound events while deleting", func() bool {
		return len(log.all()) >= before+3 &&
			testutil.ToFloat64(h.ctrl.metrics.reconciles.WithLabelValues("error")) >= errorsBefore+3
	})
	m, ok := h.machines.get("default", "early")
	if !ok || m.DeletionTimestamp == nil || !slices.Contains(m.Finalizers, FinalizerDeleteInstance) {
		t.Fatalf("deleting Machine without its provider: present %v, finalizers %v", ok, m.Finalizers)
	}
	if n := h.cloud.count(); n != 1 {
		t.Fatalf("%d servers, want the 1 still there", n)
	}
	for _, e := range log.all()[before:] {
		if e != want {
			t.Fatalf("event %q while deleting, want %q", e, want)
		}
	}

	src.on.Store(true)
	eventually(t, "deleted once the provider is back", func() bool {
		_, ok := h.machines.get("default", "early")
		return !ok
	})
	if n := h.cloud.count(); n != 0 {
		t.Fatalf("%d servers left", n)
	}
}

// Without a Recorder a missing provider is retried the same way, silently.
func TestProviderNotFoundWithoutRecorder(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Providers = NewMapSource(nil) })
	h.start()
	h.machines.Create(machine("m", "nowhere", `{}`))
	eventually(t, "retries", func() bool {
		return testutil.ToFloat64(h.ctrl.metrics.reconciles.WithLabelValues("error")) >= 3
	})
	m, _ := h.machines.get("default", "m")
	if len(m.Finalizers) != 0 || m.Status.ErrorReason != nil {
		t.Fatalf("finalizers %v, errorReason %v", m.Finalizers, m.Status.ErrorReason)
	}
}

// A Machine whose spec cannot be decoded is not a ProviderNotFound case.
func TestNoProviderNotFoundEventForOtherErrors(t *testing.T) {
	rec := record.NewFakeRecorder(1000)
	h := newHarness(t, func(o *Options) { o.Recorder = rec })
	log := drainEvents(t, rec)
	h.start()
	m := machine("garbage", "mem", `{}`)
	m.Spec.ProviderSpec.Value.Raw = []byte(`{"cloudProvider":"mem","noSuchField":1}`)
	h.machines.Create(m)
	eventually(t, "terminal", func() bool {
		return testutil.ToFloat64(h.ctrl.metrics.reconciles.WithLabelValues("terminal")) >= 1
	})
	// The echo of the terminal status write is reconciled too; then a
	// marker Event, drained after any the reconciles recorded.
	eventually(t, "the echo reconciled", func() bool {
		return testutil.ToFloat64(h.ctrl.metrics.reconciles.WithLabelValues("terminal")) >= 2
	})
	rec.Event(m, corev1.EventTypeNormal, "Marker", "drained")
	eventually(t, "the marker Event drained", func() bool {
		return slices.Contains(log.all(), "Normal Marker drained")
	})
	for _, e := range log.all() {
		if strings.Contains(e, ReasonProviderNotFound) {
			t.Fatalf("unexpected event %q", e)
		}
	}
}
