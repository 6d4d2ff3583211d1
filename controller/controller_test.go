package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wasmprov/wasmprov/internal/testing/kubefake"
	"github.com/wasmprov/wasmprov/internal/testing/wait"
	"github.com/wasmprov/wasmprov/provider"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func machine(name, provider, cloudSpec string) *clusterv1alpha1.Machine {
	v := fmt.Sprintf(`{"cloudProvider":%q,"cloudProviderSpec":%s,"operatingSystem":"ubuntu"}`, provider, cloudSpec)
	return &clusterv1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: clusterv1alpha1.MachineSpec{
			ProviderSpec: clusterv1alpha1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(v)}},
			Versions:     clusterv1alpha1.MachineVersionInfo{Kubelet: "1.37.2"},
		},
	}
}

type harness struct {
	t        *testing.T
	machines *fakeMachines
	cloud    *memCloud
	ctrl     *Controller
	reg      *prometheus.Registry
	cancel   context.CancelFunc
	done     chan error
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newHarness(t *testing.T, mutate func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, machines: newFakeMachines(), cloud: newMemCloud(), reg: prometheus.NewRegistry()}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}}
	opts := Options{
		Machines:     h.machines,
		Kube:         kubefake.New(pv),
		Providers:    NewMapSource(map[string]provider.Interface{"mem": h.cloud}),
		Workers:      3,
		PollInterval: 20 * time.Millisecond,
		RateLimiter:  workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 100*time.Millisecond),
		Registerer:   h.reg,
		Logger:       quietLogger(),
	}
	if mutate != nil {
		mutate(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.ctrl = c
	return h
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.ctrl.Run(ctx) }()
	h.t.Cleanup(h.stop)
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		h.t.Error("Run did not return after cancel")
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	wait.Until(t, what, cond)
}

func TestCreateSetsFinalizerFirstThenProviderIDAndAddresses(t *testing.T) {
	h := newHarness(t, nil)
	h.start()
	for i := range 5 {
		h.machines.Create(machine(fmt.Sprintf("m%d", i), "mem", `{"size":"small"}`))
	}
	for i := range 5 {
		name := fmt.Sprintf("m%d", i)
		eventually(t, name+" provisioned", func() bool {
			m, ok := h.machines.get("default", name)
			return ok && m.Spec.ProviderID != nil && len(m.Status.Addresses) == 2
		})
		m, _ := h.machines.get("default", name)
		if *m.Spec.ProviderID != "mem://uid-"+name {
			t.Errorf("%s providerID = %q", name, *m.Spec.ProviderID)
		}
		if !slices.Contains(m.Finalizers, FinalizerDeleteInstance) {
			t.Errorf("%s finalizers = %v", name, m.Finalizers)
		}
		if m.Status.ErrorReason != nil {
			t.Errorf("%s errorReason = %v", name, *m.Status.ErrorReason)
		}
	}
	h.cloud.mu.Lock()
	defer h.cloud.mu.Unlock()
	if h.cloud.creates != 5 || len(h.cloud.servers) != 5 {
		t.Fatalf("creates = %d, servers = %d; want 5 and 5", h.cloud.creates, len(h.cloud.servers))
	}
	for _, f := range h.cloud.finalizersAtCreate {
		if !slices.Contains(f, FinalizerDeleteInstance) {
			t.Fatalf("Create ran before the finalizer was added: %v", f)
		}
	}
}

func TestTerminalErrorGoesToStatusAndClearsWhenFixed(t *testing.T) {
	h := newHarness(t, nil)
	h.start()
	h.machines.Create(machine("bad", "mem", `{"invalid":true}`))
	eventually(t, "errorReason", func() bool {
		m, _ := h.machines.get("default", "bad")
		return m.Status.ErrorReason != nil
	})
	m, _ := h.machines.get("default", "bad")
	if *m.Status.ErrorReason != clusterv1alpha1.InvalidConfigurationMachineError || !strings.Contains(*m.Status.ErrorMessage, "spec says invalid") {
		t.Fatalf("status = %v / %v", *m.Status.ErrorReason, *m.Status.ErrorMessage)
	}
	if n := h.cloud.count(); n != 0 {
		t.Fatalf("%d servers created for an invalid machine", n)
	}
	// A terminal error is not retried on a schedule. (Our own status write
	// comes back as a watch event and is reconciled once more, without a
	// write; after that the Machine stays quiet.)
	eventually(t, "the echo of the status write reconciled", func() bool {
		return testutil.ToFloat64(h.ctrl.metrics.reconciles.WithLabelValues("terminal")) >= 2
	})
	// What the workers do with the key after a terminal reconcile: no
	// requeue, and the retry backoff forgotten. Asked of process directly,
	// rather than by waiting to see that nothing comes.
	ctx := context.Background()
	before := testutil.ToFloat64(h.ctrl.metrics.reconciles.WithLabelValues("terminal"))
	res := h.ctrl.process(ctx, ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "bad"}})
	if res != (reconcile.Result{}) {
		t.Fatalf("a terminal machine is requeued: %+v", res)
	}
	if after := testutil.ToFloat64(h.ctrl.metrics.reconciles.WithLabelValues("terminal")); after != before+1 {
		t.Fatalf("the reconcile was not terminal: terminal reconciles %v -> %v", before, after)
	}
	if n := h.ctrl.opts.RateLimiter.NumRequeues("default/bad"); n != 0 {
		t.Fatalf("retry backoff of a terminal machine kept: %d requeues", n)
	}

	// Fixing the spec triggers a reconcile that creates and clears the error.
	fixed := machine("bad", "mem", `{"size":"big"}`)
	m.Spec = fixed.Spec
	if _, err := h.machines.Update(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	eventually(t, "error cleared and instance created", func() bool {
		m, _ := h.machines.get("default", "bad")
		return m.Status.ErrorReason == nil && m.Status.ErrorMessage == nil && m.Spec.ProviderID != nil
	})
}

// A provider's terminal message goes into the Machine's status cut to
// MaxStatusMessageBytes, whatever the provider: an object of megabytes
// fails its write (etcd's limit is ~1.5 MiB) or bloats every watch.
func TestTerminalMessageInStatusIsBounded(t *testing.T) {
	h := newHarness(t, nil)
	h.start()
	long := strings.Repeat("é", 1<<19) // 1 MiB
	h.machines.Create(machine("long", "mem", `{"invalid":true,"message":"`+long+`"}`))
	eventually(t, "errorReason", func() bool {
		m, _ := h.machines.get("default", "long")
		return m.Status.ErrorReason != nil
	})
	m, _ := h.machines.get("default", "long")
	msg := *m.Status.ErrorMessage
	if len(msg) > MaxStatusMessageBytes || !utf8.ValidString(msg) || !strings.HasPrefix(msg, "éé") || !strings.HasSuffix(msg, "…") {
		t.Fatalf("status.errorMessage of %d bytes (limit %d), valid UTF-8 %v, ends %q", len(msg), MaxStatusMessageBytes, utf8.ValidString(msg), msg[max(0, len(msg)-8):])
	}
}

func TestUndecodableProviderSpecIsInvalidConfiguration(t *testing.T) {
	h := newHarness(t, nil)
	h.start()
	m := machine("garbage", "mem", `{}`)
	m.Spec.ProviderSpec.Value.Raw = []byte(`{"cloudProvider":"mem","noSuchField":1}`)
	h.machines.Create(m)
	eventually(t, "errorReason", func() bool {
		m, _ := h.machines.get("default", "garbage")
		return m.Status.ErrorReason != nil && *m.Status.ErrorReason == clusterv1alpha1.InvalidConfigurationMachineError
	})
	if got, _ := h.machines.get("default", "garbage"); len(got.Finalizers) != 0 {
		t.Fatalf("finalizer added to a machine that never reached the provider: %v", got.Finalizers)
	}
}

func TestTransientErrorsAreRetriedUntilConvergence(t *testing.T) {
	h := newHarness(t, nil)
	h.cloud.failGet = 4
	h.cloud.failErr = errors.New("503 service unavailable")
	h.start()
	h.machines.Create(machine("flaky", "mem", `{"size":"s"}`))
	eventually(t, "provisioned after errors", func() bool {
		m, _ := h.machines.get("default", "flaky")
		return m.Spec.ProviderID != nil
	})
	if got := testutil.ToFloat64(h.ctrl.metrics.reconciles.WithLabelValues("error")); got != 4 {
		t.Fatalf("error reconciles = %v, want 4", got)
	}
	m, _ := h.machines.get("default", "flaky")
	if m.Status.ErrorReason != nil {
		t.Fatal("a transient error was written as terminal")
	}
}

func TestRetryAfterHintIsHonoured(t *testing.T) {
	h := newHarness(t, nil)
	h.cloud.failGet = 1
	h.cloud.failErr = fmt.Errorf("wrapped: %w", &cloudprovidererrors.RetryableError{RetryAfter: 300 * time.Millisecond, Err: errors.New("429")})
	h.start()
	start := time.Now()
	h.machines.Create(machine("limited", "mem", `{"size":"s"}`))
	eventually(t, "provisioned", func() bool {
		m, _ := h.machines.get("default", "limited")
		return m.Spec.ProviderID != nil
	})
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("retried after %v, before the 300ms hint", d)
	}
}

func TestDeleteWaitsForInstanceGoneThenRemovesFinalizer(t *testing.T) {
	h := newHarness(t, nil)
	h.cloud.deleteSteps = 3 // the instance lingers for 3 Gets after Delete
	h.start()
	h.machines.Create(machine("doomed", "mem", `{"size":"s"}`))
	eventually(t, "provisioned", func() bool {
		m, _ := h.machines.get("default", "doomed")
		return m.Spec.ProviderID != nil
	})
	h.machines.Delete("default", "doomed")
	eventually(t, "machine gone", func() bool {
		_, ok := h.machines.get("default", "doomed")
		return !ok
	})
	h.cloud.mu.Lock()
	defer h.cloud.mu.Unlock()
	if h.cloud.deletes != 1 || len(h.cloud.servers) != 0 {
		t.Fatalf("deletes = %d, servers left = %d", h.cloud.deletes, len(h.cloud.servers))
	}
	if h.cloud.pvsAtDelete != 1 {
		t.Fatalf("PVLister showed %d PVs in Delete, want 1 (from the informer)", h.cloud.pvsAtDelete)
	}
}

func TestMachineWithoutOurFinalizerIsLeftAlone(t *testing.T) {
	h := newHarness(t, nil)
	m := machine("foreign", "mem", `{"size":"s"}`)
	m.Finalizers = []string{"someone-else"}
	h.machines.Create(m)
	h.machines.Delete("default", "foreign")
	h.start()
	eventually(t, "synced", h.ctrl.HasSynced)
	eventually(t, "the deleting machine reconciled", func() bool {
		return testutil.ToFloat64(h.ctrl.metrics.reconciles.WithLabelValues("success")) >= 1
	})
	got, ok := h.machines.get("default", "foreign")
	if !ok || !slices.Equal(got.Finalizers, []string{"someone-else"}) {
		t.Fatalf("machine touched: %v %v", ok, got)
	}
	if h.cloud.count() != 0 {
		t.Fatal("instance created for a deleting machine")
	}
}

func TestUnknownProviderIsRetried(t *testing.T) {
	src := NewMapSource(nil)
	h := newHarness(t, func(o *Options) { o.Providers = src })
	h.start()
	h.machines.Create(machine("later", "mem", `{"size":"s"}`))
	eventually(t, "a failed reconcile", func() bool {
		return testutil.ToFloat64(h.ctrl.metrics.reconciles.WithLabelValues("error")) > 0
	})
	src.Set("mem", h.cloud) // e.g. the module was dropped into the directory
	eventually(t, "provisioned once the provider exists", func() bool {
		m, _ := h.machines.get("default", "later")
		return m.Spec.ProviderID != nil
	})
}

func TestUpdaterRetriesConflicts(t *testing.T) {
	h := newHarness(t, nil)
	m := h.machines.Create(machine("c", "mem", `{}`))
	h.machines.setConflicts(2)
	stale := m.DeepCopy()
	// Someone else writes first: stale's resourceVersion is now outdated too.
	other := m.DeepCopy()
	other.Labels = map[string]string{"other": "writer"}
	h.machines.setConflicts(0)
	if _, err := h.machines.Update(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	h.machines.setConflicts(2)
	out, err := h.ctrl.Updater(context.Background())(stale, func(m *clusterv1alpha1.Machine) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations["provider"] = "was-here"
		reason := clusterv1alpha1.CreateMachineError
		m.Status.ErrorReason = &reason
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := h.machines.get("default", "c")
	if got.Annotations["provider"] != "was-here" || got.Labels["other"] != "writer" {
		t.Fatalf("update lost: annotations %v labels %v", got.Annotations, got.Labels)
	}
	if got.Status.ErrorReason == nil || *got.Status.ErrorReason != clusterv1alpha1.CreateMachineError {
		t.Fatal("status change not written through the status subresource")
	}
	if out.ResourceVersion != got.ResourceVersion {
		t.Fatalf("updater returned rv %s, stored %s", out.ResourceVersion, got.ResourceVersion)
	}
}

func TestUpdaterWritesNothingWhenUnchanged(t *testing.T) {
	h := newHarness(t, nil)
	m := h.machines.Create(machine("same", "mem", `{}`))
	before := h.machines.updates
	if _, err := h.ctrl.Updater(context.Background())(m, func(*clusterv1alpha1.Machine) {}); err != nil {
		t.Fatal(err)
	}
	if h.machines.updates != before {
		t.Fatal("a no-op modify wrote to the API server")
	}
}

func TestShutdownLetsInFlightCreateFinish(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.ShutdownTimeout = 5 * time.Second })
	h.cloud.createStarted = make(chan struct{})
	h.cloud.createRelease = make(chan struct{})
	h.start()
	h.machines.Create(machine("slow", "mem", `{"size":"s"}`))
	<-h.cloud.createStarted
	h.cancel()
	h.cancel = nil
	select {
	case <-h.done:
		t.Fatal("Run returned while a Create was in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(h.cloud.createRelease)
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the in-flight Create finished")
	}
	h.cloud.mu.Lock()
	defer h.cloud.mu.Unlock()
	if h.cloud.createCtxErr != nil {
		t.Fatalf("the in-flight Create's context was cancelled at shutdown: %v", h.cloud.createCtxErr)
	}
	if h.cloud.creates != 1 {
		t.Fatalf("creates = %d", h.cloud.creates)
	}
}

func TestShutdownGracePeriodCancelsCalls(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.ShutdownTimeout = 50 * time.Millisecond })
	h.cloud.createStarted = make(chan struct{})
	h.cloud.createRelease = make(chan struct{})
	h.start()
	h.machines.Create(machine("stuck", "mem", `{"size":"s"}`))
	<-h.cloud.createStarted
	h.cancel()
	h.cancel = nil
	h.cloud.mu.Lock()
	callCtx := h.cloud.createCtx
	h.cloud.mu.Unlock()
	eventually(t, "the call context cancelled past the grace period", func() bool { return callCtx.Err() != nil })
	close(h.cloud.createRelease)
	if err := <-h.done; err != nil {
		t.Fatal(err)
	}
	h.cloud.mu.Lock()
	defer h.cloud.mu.Unlock()
	if !errors.Is(h.cloud.createCtxErr, context.Canceled) {
		t.Fatalf("call context after the grace period: %v, want canceled", h.cloud.createCtxErr)
	}
}

func TestMetricsExportMachineMetricsLabels(t *testing.T) {
	h := newHarness(t, nil)
	h.start()
	h.machines.Create(machine("a", "mem", `{"size":"small"}`))
	h.machines.Create(machine("b", "mem", `{"size":"small"}`))
	h.machines.Create(machine("c", "mem", `{"size":"large"}`))
	for _, n := range []string{"a", "b", "c"} {
		eventually(t, n, func() bool {
			m, _ := h.machines.get("default", n)
			return m.Spec.ProviderID != nil
		})
	}
	expected := `
# HELP machine_controller_machines_total Number of machines by kubelet version, provider, OS and the provider's MachineMetricsLabels
# TYPE machine_controller_machines_total gauge
machine_controller_machines_total{kubelet_version="1.37.2",os="ubuntu",provider="mem",size="large"} 1
machine_controller_machines_total{kubelet_version="1.37.2",os="ubuntu",provider="mem",size="small"} 2
# HELP machine_controller_workers The number of running machine controller workers
# TYPE machine_controller_workers gauge
machine_controller_workers 3
`
	eventually(t, "labels observed", func() bool {
		return testutil.GatherAndCompare(h.reg, strings.NewReader(expected),
			"machine_controller_machines_total", "machine_controller_workers") == nil
	})
	if err := testutil.GatherAndCompare(h.reg, strings.NewReader(expected),
		"machine_controller_machines_total", "machine_controller_workers"); err != nil {
		t.Fatal(err)
	}
}

// With one Create slot per provider, a second Machine waits while the
// first Create runs, and is created once it returned.
func TestCreateCapPerProvider(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxConcurrentCreatesPerProvider = 1 })
	h.cloud.createStarted = make(chan struct{})
	h.cloud.createRelease = make(chan struct{})
	h.start()
	h.machines.Create(machine("a", "mem", `{"size":"s"}`))
	h.machines.Create(machine("b", "mem", `{"size":"s"}`))
	<-h.cloud.createStarted
	// The other Machine comes back every poll interval and is kept out.
	eventually(t, "three waits for the Create slot", func() bool {
		return testutil.ToFloat64(h.ctrl.metrics.createSlotWaits) >= 3
	})
	h.cloud.mu.Lock()
	entered := len(h.cloud.finalizersAtCreate)
	h.cloud.createStarted = nil // the next Create does not block
	h.cloud.mu.Unlock()
	if entered != 1 {
		t.Fatalf("%d Creates in flight under a cap of 1", entered)
	}
	close(h.cloud.createRelease)
	eventually(t, "both Machines created", func() bool {
		h.cloud.mu.Lock()
		defer h.cloud.mu.Unlock()
		return len(h.cloud.servers) == 2
	})
}
