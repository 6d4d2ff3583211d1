//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
	"github.com/wasmprov/wasmprov/runtime/oci"
	"github.com/wasmprov/wasmprov/runtime/registry"
	"github.com/wasmprov/wasmprov/runtime/signature"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

var wasmProvidersGVR = wasmprovv1alpha1.SchemeGroupVersion.WithResource(wasmprovv1alpha1.Resource)

// wpClient reads and writes WasmProviders as the admin (the controller
// user may only read them and write their status).
type wpClient struct {
	t   *testing.T
	dyn dynamic.ResourceInterface
}

func newWPClient(t *testing.T) *wpClient {
	t.Helper()
	d, err := dynamic.NewForConfig(adminCfg)
	if err != nil {
		t.Fatal(err)
	}
	return &wpClient{t: t, dyn: d.Resource(wasmProvidersGVR)}
}

func (c *wpClient) create(wp *wasmprovv1alpha1.WasmProvider) {
	c.t.Helper()
	wp.APIVersion, wp.Kind = wasmprovv1alpha1.SchemeGroupVersion.String(), "WasmProvider"
	u, err := kruntime.DefaultUnstructuredConverter.ToUnstructured(wp)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.dyn.Create(context.Background(), &unstructured.Unstructured{Object: u}, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("creating WasmProvider %s: %v", wp.Name, err)
	}
}

func (c *wpClient) get(name string) *wasmprovv1alpha1.WasmProvider {
	c.t.Helper()
	u, err := c.dyn.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatalf("getting WasmProvider %s: %v", name, err)
	}
	wp := &wasmprovv1alpha1.WasmProvider{}
	if err := kruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, wp); err != nil {
		c.t.Fatal(err)
	}
	return wp
}

// setRef points spec.source.image.ref at ref and returns the new generation.
func (c *wpClient) setRef(name, ref string) int64 {
	c.t.Helper()
	var gen int64
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := c.dyn.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(u.Object, ref, "spec", "source", "image", "ref"); err != nil {
			return err
		}
		out, err := c.dyn.Update(context.Background(), u, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		gen = out.GetGeneration()
		return nil
	})
	if err != nil {
		c.t.Fatalf("updating WasmProvider %s to %s: %v", name, ref, err)
	}
	return gen
}

func (c *wpClient) delete(name string) {
	err := c.dyn.Delete(context.Background(), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		c.t.Errorf("deleting WasmProvider %s: %v", name, err)
	}
}

// wpState is a WasmProvider's status in one line, for failure messages.
func wpState(wp *wasmprovv1alpha1.WasmProvider) string {
	s := fmt.Sprintf("generation %d observed %d", wp.Generation, wp.Status.ObservedGeneration)
	if wp.Status.Serving != nil {
		s += " serving " + wp.Status.Serving.Digest
	}
	for _, c := range wp.Status.Conditions {
		s += fmt.Sprintf(" %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
	}
	if r := wp.Status.LastRejected; r != nil {
		s += fmt.Sprintf(" lastRejected %s %s", r.Digest, r.Reason)
	}
	return s
}

func condIs(wp *wasmprovv1alpha1.WasmProvider, typ string, status metav1.ConditionStatus) bool {
	c := meta.FindStatusCondition(wp.Status.Conditions, typ)
	return c != nil && c.Status == status
}

func serving(wp *wasmprovv1alpha1.WasmProvider) string {
	if wp.Status.Serving == nil {
		return ""
	}
	return wp.Status.Serving.Digest
}

// current: the status describes the spec's generation.
func current(wp *wasmprovv1alpha1.WasmProvider) bool {
	return wp.Status.ObservedGeneration == wp.Generation
}

// TestWasmProvider serves the Hetzner provider from a WasmProvider whose
// image is in a real OCI registry, signed, to two controller replicas
// with no provider directory module: Ready on v1, a swap to v2 while
// Create calls are in flight (none fails), an unsigned v3 refused while
// v2 keeps serving, a pin back to v1 from the content store (no registry
// request), and a leader killed right after a spec change (the standby,
// already warm, takes over and status converges).
func TestWasmProvider(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	w.dirArgs = nil // replica a: no -providers at all; replica b: an empty one
	emptyDir := t.TempDir()
	reg := testregistry.Start(t, testregistry.Options{})

	// v1 and v2 differ by a trailing custom section only (a new digest,
	// the same behaviour); v3 is never signed.
	pusher, err := oci.New(oci.Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	priv, pub, err := signature.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, err := signature.ParsePrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	repo := reg.Host + "/providers/hetzner"
	push := func(tag string, wasm []byte, sign bool) string {
		t.Helper()
		d, err := pusher.Push(ctx, wasm, repo+":"+tag)
		if err != nil {
			t.Fatalf("push %s: %v", tag, err)
		}
		if sign {
			if _, _, err := signature.Sign(ctx, pusher, repo+"@"+d.String(), key); err != nil {
				t.Fatalf("sign %s: %v", tag, err)
			}
		}
		return d.String()
	}
	start := time.Now()
	v1 := push("v1", hetznerWasm, true)
	v2 := push("v2", withCustomSection(hetznerWasm, "e2e-wasmprovider-v2"), true)
	v3 := push("v3", withCustomSection(hetznerWasm, "e2e-wasmprovider-v3"), false)
	t.Logf("pushed v1 %s, v2 %s (signed), v3 %s (unsigned) in %v", v1, v2, v3, time.Since(start).Round(time.Millisecond))
	pinned := func(d string) string { return repo + "@" + d }

	common := []string{"-wasmproviders", "-wasmprovider-poll-interval", "5s", "-plain-http",
		"-docker-config", filepath.Join(t.TempDir(), "none.json")}
	a := w.startController("wp-a", append(common, "-store", filepath.Join(t.TempDir(), "store"))...)
	b := w.startController("wp-b", append(common, "-store", filepath.Join(t.TempDir(), "store"), "-providers", emptyDir)...)
	byID := map[string]*proc{"wp-a": a, "wp-b": b}
	eventually(t, 30*time.Second, "a leader", func() (bool, string) {
		return byID[w.leader()] != nil, "holder " + w.leader()
	})

	// A Machine naming a provider nothing serves yet: a ProviderNotFound
	// Event (the controller user may create Events), no finalizer.
	early := w.create(w.machine("early", nil))
	eventually(t, 60*time.Second, "a ProviderNotFound Event on the early Machine", func() (bool, string) {
		l, err := kube.CoreV1().Events(w.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=early"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range l.Items {
			if e.Reason == "ProviderNotFound" && e.Type == "Warning" && e.Source.Component == "wasmprov-controller" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(l.Items))
	})

	wps := newWPClient(t)
	policy, _ := json.Marshal(map[string]any{"allowedHosts": []string{"127.0.0.1:*"}, "allowInsecureHTTP": true, "callTimeout": "5m"})
	verify, _ := json.Marshal(map[string]any{"anyOf": []any{map[string]any{"publicKey": string(pub)}}})
	t.Cleanup(func() { wps.delete("hetzner") })
	start = time.Now()
	wps.create(&wasmprovv1alpha1.WasmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "hetzner"},
		Spec: wasmprovv1alpha1.WasmProviderSpec{
			CloudProvider: "hetzner",
			Source:        wasmprovv1alpha1.Source{Image: &wasmprovv1alpha1.ImageSource{Ref: pinned(v1)}},
			Verify:        &kruntime.RawExtension{Raw: verify},
			Policy:        &kruntime.RawExtension{Raw: policy},
		},
	})
	waitWP := func(what string, timeout time.Duration, cond func(wp *wasmprovv1alpha1.WasmProvider) bool) *wasmprovv1alpha1.WasmProvider {
		t.Helper()
		var wp *wasmprovv1alpha1.WasmProvider
		eventually(t, timeout, what, func() (bool, string) {
			wp = wps.get("hetzner")
			return cond(wp), wpState(wp)
		})
		return wp
	}
	wp := waitWP("Ready on v1", 180*time.Second, func(wp *wasmprovv1alpha1.WasmProvider) bool {
		return current(wp) && condIs(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionTrue) && serving(wp) == v1
	})
	t.Logf("WasmProvider Ready on v1 after %v: %s", time.Since(start).Round(time.Millisecond), wpState(wp))
	if !condIs(wp, wasmprovv1alpha1.ConditionVerified, metav1.ConditionTrue) || !condIs(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionFalse) {
		t.Fatalf("Ready on v1 but %s", wpState(wp))
	}
	loaded := func(p *proc) float64 {
		return p.metric("wasmprov_registry_events_total", map[string]string{"provider": "hetzner", "kind": "loaded"})
	}
	// Both replicas load it: the standby is warm.
	eventually(t, 120*time.Second, "hetzner loaded on both replicas", func() (bool, string) {
		return loaded(a) >= 1 && loaded(b) >= 1, fmt.Sprintf("loaded: a %v, b %v", loaded(a), loaded(b))
	})
	// Both are ready: every WasmProvider present was reconciled once.
	for _, p := range []*proc{a, b} {
		eventually(t, 30*time.Second, p.id+" /readyz", func() (bool, string) {
			resp, err := http.Get(strings.TrimSuffix(p.metrics, "/metrics") + "/readyz")
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, resp.Status
		})
	}
	leader := byID[w.leader()]
	standby := a
	if leader == a {
		standby = b
	}
	if n := standby.metric("wasmprov_wasmprovider_status_writes_total", nil); n != 0 {
		t.Fatalf("standby %s wrote status %v times", standby.id, n)
	}

	// The early Machine provisions once the provider is there (touch it:
	// its backoff may be long by now).
	touch(t, w, early.Name)
	w.checkProvisioned(w.waitProvisioned(90*time.Second, early.Name)[0])

	// Swap to v2 while 4 Create calls are in flight on v1.
	failedBefore := leader.metric("wasmprov_controller_reconciles_total", map[string]string{"result": "error"})
	w.hold.block()
	hot := names("wp-hot", 6)
	for _, n := range hot {
		w.create(w.machine(n, nil))
	}
	eventually(t, 60*time.Second, "4 Create calls in flight (one per worker)", func() (bool, string) {
		return w.hold.blocked() == 4, fmt.Sprintf("%d waiting", w.hold.blocked())
	})
	start = time.Now()
	wps.setRef("hetzner", pinned(v2))
	wp = waitWP("serving v2", 180*time.Second, func(wp *wasmprovv1alpha1.WasmProvider) bool {
		return current(wp) && serving(wp) == v2 && condIs(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionTrue)
	})
	t.Logf("v2 serving %v after the spec change: %s", time.Since(start).Round(time.Millisecond), wpState(wp))
	if n := w.hold.blocked(); n != 4 {
		t.Fatalf("%d Create calls in flight after the swap, want 4 (still on v1)", n)
	}
	w.hold.unblock()
	for _, m := range w.waitProvisioned(90*time.Second, hot...) {
		w.checkProvisioned(m)
	}
	failed := leader.metric("wasmprov_controller_reconciles_total", map[string]string{"result": "error"}) - failedBefore
	terminal := leader.metric("wasmprov_controller_reconciles_total", map[string]string{"result": "terminal"})
	if failed != 0 || terminal != 0 {
		t.Fatalf("the swap to v2 caused %v failed and %v terminal reconciles", failed, terminal)
	}

	// v3 is not signed: refused, v2 keeps serving.
	start = time.Now()
	wps.setRef("hetzner", pinned(v3))
	wp = waitWP("v3 refused", 120*time.Second, func(wp *wasmprovv1alpha1.WasmProvider) bool {
		return current(wp) && condIs(wp, wasmprovv1alpha1.ConditionVerified, metav1.ConditionFalse)
	})
	t.Logf("v3 refused after %v: %s", time.Since(start).Round(time.Millisecond), wpState(wp))
	if serving(wp) != v2 || !condIs(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionTrue) ||
		!condIs(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionTrue) {
		t.Fatalf("after the unsigned v3: %s; want v2 serving, Ready and Degraded", wpState(wp))
	}
	if r := wp.Status.LastRejected; r == nil || r.Digest != v3 || r.Reason != wasmprovv1alpha1.ReasonVerifyFailed {
		t.Fatalf("lastRejected %+v, want v3 with reason %s", r, wasmprovv1alpha1.ReasonVerifyFailed)
	}
	// Retrying a refused spec does not rewrite status: three retries (1 s,
	// 2 s and 4 s of backoff) write it at most twice.
	writes := leader.metric("wasmprov_wasmprovider_status_writes_total", nil)
	refused := func() float64 {
		return leader.metric("wasmprov_wasmprovider_reconciles_total", map[string]string{"result": "refused"})
	}
	refusedBefore := refused()
	rv := wp.ResourceVersion
	eventually(t, 60*time.Second, "three retries of the refused v3", func() (bool, string) {
		n := refused() - refusedBefore
		return n >= 3, fmt.Sprintf("%v retries", n)
	})
	if n := leader.metric("wasmprov_wasmprovider_status_writes_total", nil) - writes; n > 2 {
		t.Fatalf("%v status writes over three retries of a spec that keeps failing, want at most 2", n)
	}
	if again := wps.get("hetzner"); again.ResourceVersion != rv {
		t.Logf("status rewritten while v3 kept failing: %s", wpState(again))
	}

	// Pin back to v1: from the content store, no registry request. A
	// retry of the refused v3 may still be in flight on the leader or a
	// standby when the spec changes; its requests name v3 and are not
	// the pin's.
	mark := reg.Requests()
	start = time.Now()
	wps.setRef("hetzner", pinned(v1))
	wp = waitWP("serving v1 again", 5*time.Second, func(wp *wasmprovv1alpha1.WasmProvider) bool {
		return current(wp) && serving(wp) == v1 && condIs(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionFalse)
	})
	t.Logf("pinned back to v1 in %v: %s", time.Since(start).Round(time.Millisecond), wpState(wp))
	var pin []string
	for _, r := range reg.Served(mark) {
		if !strings.Contains(r, strings.TrimPrefix(v3, "sha256:")) {
			pin = append(pin, r)
		}
	}
	if len(pin) != 0 {
		t.Fatalf("pinning back to v1 made %d registry requests %q, want 0 (the store has it)", len(pin), pin)
	}

	// Change the spec to v2 and kill the leader at once: the standby,
	// v2 already in its store and v1 loaded, takes over and converges.
	gen := wps.setRef("hetzner", pinned(v2))
	leader.kill()
	start = time.Now()
	eventually(t, 30*time.Second, "takeover by "+standby.id, func() (bool, string) {
		return w.leader() == standby.id, "holder " + w.leader()
	})
	wp = waitWP("status converged on the new leader", 60*time.Second, func(wp *wasmprovv1alpha1.WasmProvider) bool {
		return wp.Generation == gen && current(wp) && serving(wp) == v2 &&
			condIs(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionTrue) && condIs(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionFalse)
	})
	t.Logf("after the SIGKILL of %s: %s leads and serves v2, status converged %v later: %s",
		leader.id, standby.id, time.Since(start).Round(time.Millisecond), wpState(wp))
	if n := standby.metric("wasmprov_wasmprovider_status_writes_total", nil); n == 0 {
		t.Fatalf("the new leader %s wrote no status", standby.id)
	}

	// The new leader serves Machines with v2.
	late := w.create(w.machine("wp-late", nil))
	w.checkProvisioned(w.waitProvisioned(90*time.Second, late.Name)[0])
	w.deleteAll()
	w.waitAllGone(90 * time.Second)
}

// touch annotates a Machine, so that the controller reconciles it now.
func touch(t *testing.T, w *world, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m, ok := w.get(name)
		if !ok {
			return fmt.Errorf("machine %s gone", name)
		}
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations["e2e.wasmprov.io/touched"] = time.Now().Format(time.RFC3339Nano)
		_, err := machines.Update(context.Background(), m)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWasmProviderNameFromDirectory: a WasmProvider claiming a name the
// provider directory already serves is refused by the registry
// (ErrDuplicateProvider), which its status says, quietly; the directory's
// module keeps serving Machines.
func TestWasmProviderNameFromDirectory(t *testing.T) {
	w := newWorld(t)
	reg := testregistry.Start(t, testregistry.Options{})
	pusher, err := oci.New(oci.Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	d, err := pusher.Push(context.Background(), withCustomSection(hetznerWasm, "e2e-wasmprovider-dup"), reg.Host+"/providers/hetzner:dup")
	if err != nil {
		t.Fatal(err)
	}
	c := w.startController("wp-dir", "-leader-elect=false", "-wasmproviders", "-plain-http",
		"-store", filepath.Join(t.TempDir(), "store"), "-docker-config", filepath.Join(t.TempDir(), "none.json"))
	wps := newWPClient(t)
	t.Cleanup(func() { wps.delete("hetzner-from-image") })
	wps.create(&wasmprovv1alpha1.WasmProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "hetzner-from-image"},
		Spec: wasmprovv1alpha1.WasmProviderSpec{
			CloudProvider: "hetzner",
			Source:        wasmprovv1alpha1.Source{Image: &wasmprovv1alpha1.ImageSource{Ref: reg.Host + "/providers/hetzner@" + d.String()}},
		},
	})
	var wp *wasmprovv1alpha1.WasmProvider
	eventually(t, 60*time.Second, "the WasmProvider refused", func() (bool, string) {
		wp = wps.get("hetzner-from-image")
		return current(wp) && condIs(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionFalse), wpState(wp)
	})
	ready := meta.FindStatusCondition(wp.Status.Conditions, wasmprovv1alpha1.ConditionReady)
	if ready.Reason != wasmprovv1alpha1.ReasonConflict || !strings.Contains(ready.Message, registry.ErrDuplicateProvider.Error()) || serving(wp) != "" {
		t.Fatalf("refused WasmProvider: %s; want Ready=False naming %q, nothing serving", wpState(wp), registry.ErrDuplicateProvider)
	}
	t.Logf("refused: %s", wpState(wp))
	if n := c.metric("wasmprov_registry_events_total", map[string]string{"provider": "hetzner", "kind": "loaded"}); n != 1 {
		t.Fatalf("hetzner loaded %v times, want once (from the directory)", n)
	}
	writes := c.metric("wasmprov_wasmprovider_status_writes_total", nil)
	m := w.create(w.machine("from-dir", nil))
	w.checkProvisioned(w.waitProvisioned(90*time.Second, m.Name)[0])
	w.deleteAll()
	w.waitAllGone(60 * time.Second)
	if n := c.metric("wasmprov_wasmprovider_status_writes_total", nil) - writes; n > 2 {
		t.Errorf("%v status writes while the refused WasmProvider did not change, want at most 2", n)
	}
}
