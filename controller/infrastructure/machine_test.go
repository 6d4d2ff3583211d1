package infrastructure

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	infrav1 "github.com/wasmprov/wasmprov/apis/infrastructure/v1alpha1"
	"github.com/wasmprov/wasmprov/controller/internal/createcap"
	"github.com/wasmprov/wasmprov/controller/internal/kubeclient"
	"github.com/wasmprov/wasmprov/internal/testing/testlog"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const ns = "default"

// env is one WasmMachine owned by a Cluster API Machine of a Cluster
// whose infrastructure is provisioned, in a fake API server.
type env struct {
	t       *testing.T
	c       client.WithWatch
	r       *MachineReconciler
	cloud   *cloud
	src     *providers
	events  *record.FakeRecorder
	machine *unstructured.Unstructured
	cluster *unstructured.Unstructured
}

type envOpt func(wm *infrav1.WasmMachine, machine, cluster *unstructured.Unstructured)

func withSpec(s cloudSpec) envOpt {
	return func(wm *infrav1.WasmMachine, _, _ *unstructured.Unstructured) { wm.Spec.ProviderSpec = providerSpec(s) }
}

func providerSpec(s cloudSpec) runtime.RawExtension {
	raw, _ := json.Marshal(map[string]any{"cloudProvider": "cloud", "cloudProviderSpec": s, "operatingSystem": "ubuntu"})
	return runtime.RawExtension{Raw: raw}
}

func newEnv(t *testing.T, opts ...envOpt) *env {
	t.Helper()
	cluster := newUnstructured(clusterGVK)
	cluster.SetNamespace(ns)
	cluster.SetName("c1")
	cluster.SetUID("cluster-uid")
	_ = unstructured.SetNestedField(cluster.Object, true, "status", "initialization", "infrastructureProvisioned")
	machine := newUnstructured(machineGVK)
	machine.SetNamespace(ns)
	machine.SetName("m1")
	machine.SetUID("machine-uid")
	_ = unstructured.SetNestedField(machine.Object, "c1", "spec", "clusterName")
	_ = unstructured.SetNestedField(machine.Object, "v1.37.2", "spec", "version")
	_ = unstructured.SetNestedField(machine.Object, "boot", "spec", "bootstrap", "dataSecretName")
	_ = unstructured.SetNestedMap(machine.Object, map[string]any{"apiGroup": infrav1.GroupName, "kind": "WasmMachine", "name": "wm1"}, "spec", "infrastructureRef")
	wm := &infrav1.WasmMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wm1", UID: "wm-uid", Generation: 1,
			Labels: map[string]string{ClusterNameLabel: "c1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: machineGVK.GroupVersion().String(),
				Kind: "Machine", Name: "m1", UID: "machine-uid"}}},
		Spec: infrav1.WasmMachineSpec{ProviderSpec: providerSpec(cloudSpec{Type: "cx22"})},
	}
	for _, o := range opts {
		o(wm, machine, cluster)
	}
	boot := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "boot"}, Data: map[string][]byte{"value": []byte("#cloud-config\njoin: yes\n")}}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(machineGVK, meta.RESTScopeNamespace)
	mapper.Add(clusterGVK, meta.RESTScopeNamespace)
	mapper.Add(infrav1.SchemeGroupVersion.WithKind("WasmMachine"), meta.RESTScopeNamespace)
	mapper.Add(infrav1.SchemeGroupVersion.WithKind("WasmCluster"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("PersistentVolume"), meta.RESTScopeRoot)
	c := fake.NewClientBuilder().WithScheme(kubeclient.Scheme).WithRESTMapper(mapper).
		WithObjects(wm, boot, machine, cluster).
		WithStatusSubresource(&infrav1.WasmMachine{}, &infrav1.WasmCluster{}).Build()
	e := &env{t: t, c: c, cloud: newCloud(), events: record.NewFakeRecorder(100), machine: machine, cluster: cluster}
	e.src = &providers{cloud: e.cloud}
	r, err := NewMachineReconciler(MachineOptions{Client: c, APIReader: c, Providers: e.src, Recorder: e.events,
		Logger: quiet(), PollInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e.r = r
	return e
}

func quiet() *slog.Logger { l, _ := testlog.NewText(); return l }

var key = types.NamespacedName{Namespace: ns, Name: "wm1"}

// reconcile runs one reconcile and returns its error, which Reconcile
// itself turns into a requeue with backoff.
func (e *env) reconcile() (reconcile.Result, error) {
	e.t.Helper()
	return e.r.reconcileKey(context.Background(), reconcile.Request{NamespacedName: key})
}

func (e *env) mustReconcile() reconcile.Result {
	e.t.Helper()
	res, err := e.reconcile()
	if err != nil {
		e.t.Fatalf("reconcile: %v", err)
	}
	return res
}

func (e *env) get() *infrav1.WasmMachine {
	e.t.Helper()
	wm := &infrav1.WasmMachine{}
	if err := e.c.Get(context.Background(), key, wm); err != nil {
		e.t.Fatal(err)
	}
	return wm
}

func (e *env) condition(typ string) metav1.Condition {
	e.t.Helper()
	c := meta.FindStatusCondition(e.get().Status.Conditions, typ)
	if c == nil {
		e.t.Fatalf("no %s condition in %+v", typ, e.get().Status.Conditions)
	}
	return *c
}

func (e *env) wantReady(status metav1.ConditionStatus, reason string) {
	e.t.Helper()
	if c := e.condition(infrav1.ConditionReady); c.Status != status || c.Reason != reason {
		e.t.Fatalf("Ready = %s/%s (%s), want %s/%s", c.Status, c.Reason, c.Message, status, reason)
	}
}

// The whole life of a WasmMachine: finalizer, then Create with the
// bootstrap data as userdata, Get until running (providerID, addresses,
// provisioned, Ready), and on deletion Cleanup until done before the
// finalizer goes.
func TestMachineLifecycle(t *testing.T) {
	e := newEnv(t)
	e.cloud.bootGets = 1
	e.cloud.deleteSteps = 1
	if res := e.mustReconcile(); res.RequeueAfter != time.Second {
		t.Fatalf("after Create: %+v, want a requeue after the poll interval", res)
	}
	wm := e.get()
	if len(wm.Finalizers) != 1 || wm.Finalizers[0] != infrav1.FinalizerWasmMachine {
		t.Fatalf("finalizers %v", wm.Finalizers)
	}
	if e.cloud.count("Create") != 1 || len(e.cloud.userdata) != 1 || e.cloud.userdata[0] != "#cloud-config\njoin: yes\n" {
		t.Fatalf("Create calls %d, userdata %q", e.cloud.count("Create"), e.cloud.userdata)
	}
	e.wantReady(metav1.ConditionFalse, infrav1.ReasonProvisioning)

	// Creating: the providerID is known, the machine is not provisioned.
	if res := e.mustReconcile(); res.RequeueAfter != time.Second {
		t.Fatalf("while creating: %+v", res)
	}
	if wm := e.get(); wm.Spec.ProviderID != "cloud://srv-wm1" || wm.Status.Initialization != nil {
		t.Fatalf("creating: providerID %q, initialization %+v", wm.Spec.ProviderID, wm.Status.Initialization)
	}
	if res := e.mustReconcile(); res != (reconcile.Result{}) {
		t.Fatalf("running: %+v, want done", res)
	}
	wm = e.get()
	if wm.Status.Initialization == nil || !*wm.Status.Initialization.Provisioned ||
		wm.Status.InstanceStatus != "running" || len(wm.Status.Addresses) != 2 ||
		wm.Status.Addresses[0] != (infrav1.MachineAddress{Type: "ExternalIP", Address: "203.0.113.1"}) {
		t.Fatalf("running: status %+v", wm.Status)
	}
	e.wantReady(metav1.ConditionTrue, infrav1.ReasonProvisioned)
	if c := e.condition(infrav1.ConditionPaused); c.Status != metav1.ConditionFalse {
		t.Fatalf("Paused %+v", c)
	}
	if e.cloud.count("Create") != 1 {
		t.Fatalf("%d Create calls", e.cloud.count("Create"))
	}

	if err := e.c.Delete(context.Background(), wm); err != nil {
		t.Fatal(err)
	}
	if res := e.mustReconcile(); res.RequeueAfter <= 0 {
		t.Fatalf("deletion in progress: %+v, want a requeue", res)
	}
	e.wantReady(metav1.ConditionFalse, infrav1.ReasonDeleting)
	e.mustReconcile()
	if err := e.c.Get(context.Background(), key, &infrav1.WasmMachine{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after Cleanup done: %v, want the WasmMachine gone", err)
	}
	if len(e.cloud.instances) != 0 || e.cloud.count("Cleanup") != 2 {
		t.Fatalf("instances %d, Cleanup calls %d", len(e.cloud.instances), e.cloud.count("Cleanup"))
	}
	e.mustReconcile() // gone: nothing to do, no error
}

// No bootstrap data yet: no Create, Ready says what it waits for.
func TestMachineWaitsForBootstrapData(t *testing.T) {
	e := newEnv(t, func(_ *infrav1.WasmMachine, m, _ *unstructured.Unstructured) {
		unstructured.RemoveNestedField(m.Object, "spec", "bootstrap", "dataSecretName")
	})
	if res := e.mustReconcile(); res != (reconcile.Result{}) {
		t.Fatalf("%+v, want no requeue (the Machine's update enqueues it)", res)
	}
	if n := e.cloud.count("Create"); n != 0 {
		t.Fatalf("%d Create calls before the bootstrap data", n)
	}
	e.wantReady(metav1.ConditionFalse, infrav1.ReasonWaitingForBootstrapData)
}

// Without an owning Machine, or with a Cluster whose infrastructure is
// not provisioned, nothing is created.
func TestMachineWaitsForOwnerAndCluster(t *testing.T) {
	e := newEnv(t, func(wm *infrav1.WasmMachine, _, _ *unstructured.Unstructured) { wm.OwnerReferences = nil })
	e.mustReconcile()
	e.wantReady(metav1.ConditionFalse, infrav1.ReasonWaitingForMachineOwner)
	e = newEnv(t, func(_ *infrav1.WasmMachine, _, c *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(c.Object, false, "status", "initialization", "infrastructureProvisioned")
	})
	e.mustReconcile()
	e.wantReady(metav1.ConditionFalse, infrav1.ReasonWaitingForCluster)
	if e.cloud.total() != 0 {
		t.Fatalf("provider calls %v before the cluster's infrastructure", e.cloud.calls)
	}
}

// A paused Cluster (spec.paused) or WasmMachine (annotation): no provider
// call, not even for a deletion; Paused says so.
func TestMachinePaused(t *testing.T) {
	e := newEnv(t, func(_ *infrav1.WasmMachine, _, c *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(c.Object, true, "spec", "paused")
	})
	e.mustReconcile()
	if c := e.condition(infrav1.ConditionPaused); c.Status != metav1.ConditionTrue {
		t.Fatalf("Paused %+v", c)
	}
	e = newEnv(t, func(wm *infrav1.WasmMachine, _, _ *unstructured.Unstructured) {
		wm.Annotations = map[string]string{PausedAnnotation: ""}
		wm.Finalizers = []string{infrav1.FinalizerWasmMachine}
	})
	if err := e.c.Delete(context.Background(), e.get()); err != nil {
		t.Fatal(err)
	}
	e.mustReconcile()
	if e.cloud.total() != 0 || len(e.get().Finalizers) != 1 {
		t.Fatalf("paused: provider calls %v, finalizers %v", e.cloud.calls, e.get().Finalizers)
	}
}

// A spec the provider refuses for good: TerminalFailure with
// machine-controller's reason, the v1beta1 failure fields, one Event; no
// retry — not even a Get — until the spec changes.
func TestMachineTerminalError(t *testing.T) {
	e := newEnv(t, withSpec(cloudSpec{Type: "cx22", Refuse: "server type cx22 does not exist"}))
	if res, err := e.reconcile(); err != nil || res != (reconcile.Result{}) {
		t.Fatalf("terminal: %+v, %v; want no retry", res, err)
	}
	c := e.condition(infrav1.ConditionTerminalFailure)
	if c.Status != metav1.ConditionTrue || c.Reason != "InvalidConfiguration" || c.Message != "server type cx22 does not exist" {
		t.Fatalf("TerminalFailure %+v", c)
	}
	e.wantReady(metav1.ConditionFalse, infrav1.ReasonTerminalError)
	if wm := e.get(); wm.Status.FailureReason == nil || *wm.Status.FailureReason != "InvalidConfiguration" {
		t.Fatalf("failureReason %v", wm.Status.FailureReason)
	}
	calls := e.cloud.total()
	for range 3 {
		e.mustReconcile()
	}
	if e.cloud.total() != calls || e.cloud.count("Create") != 0 {
		t.Fatalf("provider calls went from %d to %d (%v) with the same spec", calls, e.cloud.total(), e.cloud.calls)
	}
	if n := len(e.events.Events); n != 1 {
		t.Fatalf("%d Events, want one TerminalError", n)
	}
	// A new spec (a new generation) is tried again.
	wm := e.get()
	wm.Spec.ProviderSpec = providerSpec(cloudSpec{Type: "cx32"})
	wm.Generation++
	if err := e.c.Update(context.Background(), wm); err != nil {
		t.Fatal(err)
	}
	e.mustReconcile()
	if e.cloud.count("Create") != 1 {
		t.Fatalf("after the spec changed: %d Create calls", e.cloud.count("Create"))
	}
	if c := e.condition(infrav1.ConditionTerminalFailure); c.Status != metav1.ConditionFalse {
		t.Fatalf("TerminalFailure after the fix: %+v", c)
	}
}

// A provider that is not serving: an error (retried by the rate
// limiter, not a hot loop), Ready says so, an Event names it; no call.
func TestMachineProviderNotServing(t *testing.T) {
	e := newEnv(t)
	e.src.cloud = nil
	for range 3 {
		if _, err := e.reconcile(); err == nil || !strings.Contains(err.Error(), `provider "cloud"`) {
			t.Fatalf("err %v, want the provider named", err)
		}
	}
	e.wantReady(metav1.ConditionFalse, infrav1.ReasonProviderNotServing)
	if ev := <-e.events.Events; !strings.Contains(ev, EventProviderNotServing) {
		t.Fatalf("event %q", ev)
	}
	// Through Reconcile: no error for controller-runtime to log, a requeue
	// after a growing backoff (not a hot loop).
	var last time.Duration
	for i := range 4 {
		res, err := e.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
		if err != nil || res.RequeueAfter < 500*time.Millisecond || (i > 0 && res.RequeueAfter != 2*last) {
			t.Fatalf("retry %d: %+v, %v (previous wait %v)", i, res, err, last)
		}
		last = res.RequeueAfter
	}
	if n := testutil.ToFloat64(e.r.metrics.reconciles.WithLabelValues("error")); n != 4 {
		t.Fatalf("reconciles{result=error} = %v, want 4", n)
	}
	// Never served, so no finalizer: it is deleted at once, without a
	// provider that could say whether an instance exists.
	if f := e.get().Finalizers; len(f) != 0 {
		t.Fatalf("finalizers %v before any provider call", f)
	}
	if err := e.c.Delete(context.Background(), e.get()); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Get(context.Background(), key, &infrav1.WasmMachine{}); !apierrors.IsNotFound(err) {
		t.Fatalf("deleted WasmMachine: %v, want it gone", err)
	}
}

// AddDefaults' answer is stored in the WasmMachine's spec before Create,
// as machine-controller's webhook stores it.
func TestMachineDefaultsStored(t *testing.T) {
	e := newEnv(t, withSpec(cloudSpec{Type: "cx22", Defaults: true}))
	e.mustReconcile()
	_, cs, err := specOf(*machineView(e.get(), "").Spec.DeepCopy())
	if err != nil || cs.Location != "fsn1" {
		t.Fatalf("stored spec %+v, %v; want the default location", cs, err)
	}
	if n := e.cloud.count("Create"); n != 1 {
		t.Fatalf("%d Create calls", n)
	}
}

// A provisioned machine whose instance disappeared is not recreated:
// Cluster API replaces machines, it does not mend them.
func TestMachineInstanceGoneNotRecreated(t *testing.T) {
	e := newEnv(t)
	e.mustReconcile()
	e.mustReconcile()
	e.cloud.mu.Lock()
	clear(e.cloud.instances)
	e.cloud.mu.Unlock()
	e.mustReconcile()
	e.wantReady(metav1.ConditionFalse, infrav1.ReasonInstanceGone)
	if n := e.cloud.count("Create"); n != 1 {
		t.Fatalf("%d Create calls", n)
	}
}

// A provider's message of megabytes is cut to the condition's limit.
func TestMachineMessageClipped(t *testing.T) {
	e := newEnv(t, withSpec(cloudSpec{Type: "x", Refuse: strings.Repeat("é", 1<<20)}))
	e.mustReconcile()
	if c := e.condition(infrav1.ConditionTerminalFailure); len(c.Message) > maxConditionMessage || !strings.HasSuffix(c.Message, "…") {
		t.Fatalf("message of %d bytes", len(c.Message))
	}
}

// A provider's addresses are bounded: at most maxAddresses, each cut.
func TestAddressesBounded(t *testing.T) {
	in := map[string]corev1.NodeAddressType{}
	for i := range 100 {
		in[fmt.Sprintf("10.0.%d.%d", i/256, i%256)] = corev1.NodeInternalIP
	}
	in[strings.Repeat("a", 10000)] = corev1.NodeHostName
	out := addresses(in)
	if len(out) != maxAddresses {
		t.Fatalf("%d addresses", len(out))
	}
	for _, a := range addresses(map[string]corev1.NodeAddressType{strings.Repeat("a", 10000): corev1.NodeHostName}) {
		if len(a.Address) > 256 {
			t.Fatalf("address of %d bytes", len(a.Address))
		}
	}
}

// With the provider's Create cap reached, the WasmMachine waits for a
// slot (Ready says so, no Create) and is looked at again; once a slot is
// free, it is created.
func TestMachineWaitsForACreateSlot(t *testing.T) {
	e := newEnv(t)
	e.r.caps = createcap.New(1, 0)
	release, ok := e.r.caps.TryAcquire("cloud", "")
	if !ok {
		t.Fatal("no slot")
	}
	if res := e.mustReconcile(); res.RequeueAfter != time.Second {
		t.Fatalf("%+v, want a requeue after the poll interval", res)
	}
	e.wantReady(metav1.ConditionFalse, infrav1.ReasonWaitingForCreateSlot)
	if n := e.cloud.count("Create"); n != 0 {
		t.Fatalf("%d Create calls beyond the cap", n)
	}
	release()
	e.mustReconcile()
	if n := e.cloud.count("Create"); n != 1 || e.r.caps.InFlight("cloud") != 0 {
		t.Fatalf("%d Create calls, %d slots held after it returned", n, e.r.caps.InFlight("cloud"))
	}
}
