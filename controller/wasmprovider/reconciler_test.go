package wasmprovider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/controller/wasmprovider"
	testwait "github.com/wasmprov/wasmprov/internal/testing/wait"
	"github.com/wasmprov/wasmprov/runtime/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

func cmWP(name, cp, key, sha string) *wasmprovv1alpha1.WasmProvider {
	return &wasmprovv1alpha1.WasmProvider{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: wasmprovv1alpha1.WasmProviderSpec{CloudProvider: cp,
			Source: wasmprovv1alpha1.Source{ConfigMap: &wasmprovv1alpha1.ConfigMapSource{
				Namespace: "kube-system", Name: "modules", Key: key, SHA256: sha}}}}
}

// A ConfigMap source with the right sha256 serves "sha256:<module>"; a
// spec naming a wrong one is refused with DigestMismatch while the first
// version keeps serving.
func TestConfigMapSource(t *testing.T) {
	e := newEnv(t, envOpts{leader: true})
	v1, v2 := version(t, "cm1"), version(t, "cm2")
	e.precompile(t, v1)
	e.configMap(t, "kube-system", "modules", "fake.wasm", v1)
	e.wps.create(cmWP("fake", "fake", "fake.wasm", sum(v1)), time.Now())
	want := "sha256:" + sum(v1)
	wp := e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(serving(wp, want),
			cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionTrue, wasmprovv1alpha1.ReasonServing),
			cond(wp, wasmprovv1alpha1.ConditionPulled, metav1.ConditionTrue, wasmprovv1alpha1.ReasonPulled),
			cond(wp, wasmprovv1alpha1.ConditionVerified, metav1.ConditionTrue, wasmprovv1alpha1.ReasonNotRequired),
			cond(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionFalse, wasmprovv1alpha1.ReasonUpToDate))
	})
	if got := e.registryServes("fake"); got != want {
		t.Fatalf("registry serves %q, want %q", got, want)
	}
	if s := wp.Status.Serving; s.ModuleSHA256 != sum(v1) || s.Ref != "kube-system/modules/fake.wasm" {
		t.Fatalf("serving = %+v", s)
	}
	e.waitEvent(t, "fake", "Normal Loaded: "+want)

	// The ConfigMap gains v2 under another key, but the spec names v2's
	// key with v1's digest.
	cm, err := e.kube.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "modules", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.BinaryData["v2.wasm"] = v2
	if _, err := e.kube.CoreV1().ConfigMaps("kube-system").Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.wps.updateSpec(t, "fake", func(s *wasmprovv1alpha1.WasmProviderSpec) { s.Source.ConfigMap.Key = "v2.wasm" })
	wp = e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(serving(wp, want),
			cond(wp, wasmprovv1alpha1.ConditionPulled, metav1.ConditionFalse, wasmprovv1alpha1.ReasonDigestMismatch),
			cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionTrue, wasmprovv1alpha1.ReasonServing),
			cond(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionTrue, wasmprovv1alpha1.ReasonPreviousServing))
	})
	rej := wp.Status.LastRejected
	if rej == nil || rej.Reason != wasmprovv1alpha1.ReasonDigestMismatch || !strings.Contains(rej.Message, sum(v2)) || rej.Ref != "kube-system/modules/v2.wasm" {
		t.Fatalf("lastRejected = %+v", rej)
	}
	if got := e.registryServes("fake"); got != want {
		t.Fatalf("after the mismatch the registry serves %q, want %q", got, want)
	}
	e.waitEvent(t, "fake", "Warning PullFailed: module digest sha256:"+sum(v2))

	// The right digest: v2 swaps in.
	e.wps.updateSpec(t, "fake", func(s *wasmprovv1alpha1.WasmProviderSpec) { s.Source.ConfigMap.SHA256 = sum(v2) })
	e.precompile(t, v2)
	want2 := "sha256:" + sum(v2)
	wp = e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(serving(wp, want2),
			cond(wp, wasmprovv1alpha1.ConditionPulled, metav1.ConditionTrue, wasmprovv1alpha1.ReasonPulled),
			cond(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionFalse, wasmprovv1alpha1.ReasonUpToDate))
	})
	if len(wp.Status.Revisions) != 2 || wp.Status.Revisions[0].Digest != want2 || wp.Status.Revisions[1].Digest != want {
		t.Fatalf("revisions = %+v, want [%s %s]", wp.Status.Revisions, want2, want)
	}
	e.waitEvent(t, "fake", "Normal Swapped: "+want+" -> "+want2)
}

// A policy with an unknown field is an invalid spec: nothing is loaded and
// status names the field.
func TestInvalidPolicy(t *testing.T) {
	e := newEnv(t, envOpts{leader: true})
	v1 := version(t, "cm1")
	e.configMap(t, "kube-system", "modules", "fake.wasm", v1)
	wp := cmWP("fake", "fake", "fake.wasm", sum(v1))
	wp.Spec.Policy = raw(`{"poolSize":2,"poolSzie":3}`)
	e.wps.create(wp, time.Now())
	got := e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionFalse, wasmprovv1alpha1.ReasonInvalidSpec),
			cond(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionTrue, wasmprovv1alpha1.ReasonNothingServing))
	})
	if c := condMessage(got, wasmprovv1alpha1.ConditionReady); !strings.Contains(c, "poolSzie") {
		t.Fatalf("Ready message %q does not name the unknown field", c)
	}
	if got.Status.Serving != nil || e.registryServes("fake") != "" {
		t.Fatalf("an invalid spec loaded something: status %+v, registry %q", got.Status.Serving, e.registryServes("fake"))
	}
	if _, err := e.reg.Get("fake"); !errors.Is(err, registry.ErrProviderNotFound) {
		t.Fatalf("registry Get = %v, want ErrProviderNotFound", err)
	}
	e.waitEvent(t, "fake", "Warning InvalidSpec: spec.policy")
}

func condMessage(wp *wasmprovv1alpha1.WasmProvider, typ string) string {
	for _, c := range wp.Status.Conditions {
		if c.Type == typ {
			return c.Message
		}
	}
	return ""
}

// A spec refused over and over writes its status once, and is retried
// with a doubling backoff, on the reconciler's clock (a fake one here,
// stepped a second per poll of the test's condition).
func TestRefusedSpecWritesStatusOnce(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	e := newEnv(t, envOpts{leader: true, mutate: func(o *wasmprovider.Options) {
		o.RetryBackoff, o.MaxRetryBackoff = time.Second, 20*time.Second
		o.Clock = clk
	}})
	v1 := version(t, "cm1")
	e.configMap(t, "kube-system", "modules", "fake.wasm", v1)
	e.wps.create(cmWP("fake", "fake", "fake.wasm", strings.Repeat("0", 64)), time.Now())
	e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return cond(wp, wasmprovv1alpha1.ConditionPulled, metav1.ConditionFalse, wasmprovv1alpha1.ReasonDigestMismatch)
	})
	start := clk.Now()
	before := e.counter(t, "wasmprov_wasmprovider_reconciles_total", map[string]string{"result": "refused"})
	testwait.For(t, "the refused spec retried at least 10 times", func() (bool, string) {
		n := e.counter(t, "wasmprov_wasmprovider_reconciles_total", map[string]string{"result": "refused"})
		if n >= before+10 {
			return true, ""
		}
		clk.Step(time.Second)
		return false, fmt.Sprintf("%v retries in %v of the clock", n-before, clk.Since(start))
	})
	after := e.counter(t, "wasmprov_wasmprovider_reconciles_total", map[string]string{"result": "refused"})
	if w := e.wps.writeCount(); w != 1 {
		t.Fatalf("%d status writes over %v reconciles, want 1", w, after)
	}
	if w := e.counter(t, "wasmprov_wasmprovider_status_writes_total", nil); w != 1 {
		t.Fatalf("wasmprov_wasmprovider_status_writes_total = %v, want 1", w)
	}
	// Backoff, not a hot loop or a fixed pace: doubling from 1 s to the
	// 20 s cap, ten retries take 1+2+4+8+16+5×20 = 131 s of the clock (91
	// s if the first refusal was counted among them); a retry every
	// second would take 10 s, a hot loop none.
	if took := clk.Since(start); took < 91*time.Second {
		t.Fatalf("%v retries in %v of the clock: sooner than a doubling backoff allows", after-before, took)
	}
	if n := len(e.events(t, "fake")); n != 1 {
		t.Fatalf("%d Events, want 1: %q", n, e.events(t, "fake"))
	}
}

// A standby replica loads the providers but writes no status and records
// no Event; once leader (LeadershipChanged), status converges.
func TestNonLeaderLoadsThenConverges(t *testing.T) {
	e := newEnv(t, envOpts{leader: false})
	v1 := version(t, "cm1")
	e.precompile(t, v1)
	e.configMap(t, "kube-system", "modules", "fake.wasm", v1)
	e.wps.create(cmWP("fake", "fake", "fake.wasm", sum(v1)), time.Now())
	want := "sha256:" + sum(v1)
	e.waitRegistry(t, "fake", want)
	testwait.Until(t, "HasSynced", e.rec.HasSynced)
	e.waitReconciles(t, "ok", 1) // past a poll
	if w := e.wps.writeCount(); w != 0 {
		t.Fatalf("a standby wrote status %d times", w)
	}
	if ev := e.events(t, "fake"); len(ev) != 0 {
		t.Fatalf("a standby recorded Events %q", ev)
	}
	e.leader.set(true)
	e.rec.LeadershipChanged()
	e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(serving(wp, want), cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionTrue, wasmprovv1alpha1.ReasonServing))
	})
}

// Deleting the WasmProvider unregisters its cloud provider.
func TestDeletionUnregisters(t *testing.T) {
	e := newEnv(t, envOpts{leader: true})
	v1 := version(t, "cm1")
	e.precompile(t, v1)
	e.configMap(t, "kube-system", "modules", "fake.wasm", v1)
	e.wps.create(cmWP("fake", "fake", "fake.wasm", sum(v1)), time.Now())
	e.waitRegistry(t, "fake", "sha256:"+sum(v1))
	e.wps.delete("fake")
	e.waitRegistry(t, "fake", "")
	if _, err := e.reg.Get("fake"); !errors.Is(err, registry.ErrProviderNotFound) {
		t.Fatalf("after deletion Get = %v, want ErrProviderNotFound", err)
	}
}

// Two WasmProviders claim one cloud provider: the younger reports a
// Conflict naming the older and loads nothing; when the older is deleted
// it takes over.
func TestConflictAndTakeover(t *testing.T) {
	e := newEnv(t, envOpts{leader: true})
	v1, v2 := version(t, "cm1"), version(t, "cm2")
	e.precompile(t, v1)
	e.precompile(t, v2)
	e.configMap(t, "kube-system", "modules", "v1.wasm", v1)
	cm, _ := e.kube.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "modules", metav1.GetOptions{})
	cm.BinaryData["v2.wasm"] = v2
	if _, err := e.kube.CoreV1().ConfigMaps("kube-system").Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	// The younger is created first: what decides is the creation time.
	e.wps.create(cmWP("young", "fake", "v2.wasm", sum(v2)), now)
	e.wps.create(cmWP("old", "fake", "v1.wasm", sum(v1)), now.Add(-time.Hour))
	e.waitWP(t, "old", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(serving(wp, "sha256:"+sum(v1)), cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionTrue, wasmprovv1alpha1.ReasonServing))
	})
	young := e.waitWP(t, "young", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionFalse, wasmprovv1alpha1.ReasonConflict)
	})
	if m := condMessage(young, wasmprovv1alpha1.ConditionReady); !strings.Contains(m, `"old"`) {
		t.Fatalf("Conflict message %q does not name the winner", m)
	}
	if young.Status.Serving != nil {
		t.Fatalf("the loser reports serving %+v", young.Status.Serving)
	}
	e.waitEvent(t, "young", "Warning Conflict:")
	// Still v1 after a poll: the loser loaded nothing.
	e.waitReconciles(t, "conflict", 1)
	if got := e.registryServes("fake"); got != "sha256:"+sum(v1) {
		t.Fatalf("registry serves %q, want the older claim's", got)
	}
	e.wps.delete("old")
	e.waitWP(t, "young", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(serving(wp, "sha256:"+sum(v2)), cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionTrue, wasmprovv1alpha1.ReasonServing))
	})
	e.waitRegistry(t, "fake", "sha256:"+sum(v2))
}

// A URL source on loopback serves; a body over MaxModuleBytes is refused.
func TestURLSource(t *testing.T) {
	v1 := version(t, "cm1")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fake.wasm" {
			w.Write(v1)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	e := newEnv(t, envOpts{leader: true})
	e.precompile(t, v1)
	wp := &wasmprovv1alpha1.WasmProvider{ObjectMeta: metav1.ObjectMeta{Name: "fake"},
		Spec: wasmprovv1alpha1.WasmProviderSpec{CloudProvider: "fake",
			Source: wasmprovv1alpha1.Source{URL: &wasmprovv1alpha1.URLSource{URL: srv.URL + "/fake.wasm", SHA256: sum(v1)}}}}
	e.wps.create(wp, time.Now())
	e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(serving(wp, "sha256:"+sum(v1)), cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionTrue, wasmprovv1alpha1.ReasonServing))
	})
	e.wps.updateSpec(t, "fake", func(s *wasmprovv1alpha1.WasmProviderSpec) { s.Source.URL.URL = srv.URL + "/missing.wasm" })
	wp = e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(serving(wp, "sha256:"+sum(v1)),
			cond(wp, wasmprovv1alpha1.ConditionPulled, metav1.ConditionFalse, wasmprovv1alpha1.ReasonPullFailed),
			cond(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionTrue, wasmprovv1alpha1.ReasonPreviousServing))
	})
	if m := wp.Status.LastRejected.Message; !strings.Contains(m, "404") {
		t.Fatalf("lastRejected message %q", m)
	}
}

// The serving WasmProvider renames its cloud provider: the other claimant
// takes the old name over, the renamed one serves the new name.
func TestRenameHandsOver(t *testing.T) {
	e := newEnv(t, envOpts{leader: true})
	v1, v2 := version(t, "cm1"), version(t, "cm2")
	e.precompile(t, v1)
	e.precompile(t, v2)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "modules"},
		BinaryData: map[string][]byte{"v1.wasm": v1, "v2.wasm": v2}}
	if _, err := e.kube.CoreV1().ConfigMaps("kube-system").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	e.wps.create(cmWP("old", "fake", "v1.wasm", sum(v1)), now.Add(-time.Hour))
	e.wps.create(cmWP("young", "fake", "v2.wasm", sum(v2)), now)
	e.waitWP(t, "young", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionFalse, wasmprovv1alpha1.ReasonConflict)
	})
	e.waitRegistry(t, "fake", "sha256:"+sum(v1))
	e.wps.updateSpec(t, "old", func(s *wasmprovv1alpha1.WasmProviderSpec) { s.CloudProvider = "other" })
	e.waitWP(t, "young", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(serving(wp, "sha256:"+sum(v2)), cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionTrue, wasmprovv1alpha1.ReasonServing))
	})
	e.waitWP(t, "old", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(serving(wp, "sha256:"+sum(v1)), cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionTrue, wasmprovv1alpha1.ReasonServing))
	})
	e.waitRegistry(t, "fake", "sha256:"+sum(v2))
	e.waitRegistry(t, "other", "sha256:"+sum(v1))
}

// A status write that meets a conflict re-reads the object and writes
// again.
func TestStatusConflictRetried(t *testing.T) {
	e := newEnv(t, envOpts{leader: true, noStart: true})
	v1 := version(t, "cm1")
	e.precompile(t, v1)
	e.configMap(t, "kube-system", "modules", "fake.wasm", v1)
	e.wps.mu.Lock()
	e.wps.conflictNext = 2
	e.wps.mu.Unlock()
	e.wps.create(cmWP("fake", "fake", "fake.wasm", sum(v1)), time.Now())
	e.start(t)
	wp := e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(serving(wp, "sha256:"+sum(v1)), cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionTrue, wasmprovv1alpha1.ReasonServing))
	})
	if wp.Annotations["other-writer"] != "2" {
		t.Fatalf("annotations %v: the conflicts did not happen", wp.Annotations)
	}
	e.waitReconciles(t, "ok", 1) // past a poll: nothing more to write
	if w := e.wps.writeCount(); w != 1 {
		t.Fatalf("%d status writes, want 1", w)
	}
}

// Content that is not a module, with its right digest: fetched, refused by
// the registry's load (InvalidModule), nothing serving.
func TestInvalidModule(t *testing.T) {
	e := newEnv(t, envOpts{leader: true})
	junk := []byte("\x00asm\x01\x00\x00\x00 not really a module")
	e.configMap(t, "kube-system", "modules", "fake.wasm", junk)
	e.wps.create(cmWP("fake", "fake", "fake.wasm", sum(junk)), time.Now())
	wp := e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(cond(wp, wasmprovv1alpha1.ConditionPulled, metav1.ConditionTrue, wasmprovv1alpha1.ReasonPulled),
			cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionFalse, wasmprovv1alpha1.ReasonInvalidModule),
			cond(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionTrue, wasmprovv1alpha1.ReasonNothingServing))
	})
	if rej := wp.Status.LastRejected; rej == nil || rej.Reason != wasmprovv1alpha1.ReasonInvalidModule || rej.Digest != "sha256:"+sum(junk) {
		t.Fatalf("lastRejected = %+v", rej)
	}
	e.waitEvent(t, "fake", "Warning Rejected:")
}

// A URL module over MaxModuleBytes is refused without being read whole;
// plain http to a host that is not loopback is an invalid spec.
func TestURLLimits(t *testing.T) {
	v1 := version(t, "cm1")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(v1) }))
	defer srv.Close()
	e := newEnv(t, envOpts{leader: true, mutate: func(o *wasmprovider.Options) { o.MaxModuleBytes = 4096 }})
	urlWP := func(name, cp, u string) *wasmprovv1alpha1.WasmProvider {
		return &wasmprovv1alpha1.WasmProvider{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: wasmprovv1alpha1.WasmProviderSpec{CloudProvider: cp,
				Source: wasmprovv1alpha1.Source{URL: &wasmprovv1alpha1.URLSource{URL: u, SHA256: sum(v1)}}}}
	}
	e.wps.create(urlWP("big", "big", srv.URL+"/fake.wasm"), time.Now())
	e.wps.create(urlWP("far", "far", "http://example.com/fake.wasm"), time.Now())
	big := e.waitWP(t, "big", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return cond(wp, wasmprovv1alpha1.ConditionPulled, metav1.ConditionFalse, wasmprovv1alpha1.ReasonPullFailed)
	})
	if m := big.Status.LastRejected.Message; !strings.Contains(m, "exceeds the limit of 4096 bytes") {
		t.Fatalf("lastRejected message %q", m)
	}
	far := e.waitWP(t, "far", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionFalse, wasmprovv1alpha1.ReasonInvalidSpec)
	})
	if m := condMessage(far, wasmprovv1alpha1.ConditionReady); !strings.Contains(m, "loopback") {
		t.Fatalf("Ready message %q", m)
	}
	if e.registryServes("big") != "" || e.registryServes("far") != "" {
		t.Fatal("a refused URL source serves")
	}
}

// Messages are trimmed to 1 KiB, in conditions, lastRejected and Events.
func TestLongMessageTrimmed(t *testing.T) {
	e := newEnv(t, envOpts{leader: true})
	v1 := version(t, "cm1")
	e.configMap(t, "kube-system", "modules", "fake.wasm", v1)
	long := strings.Repeat("é", 1500) // two bytes each: a cut must not split one
	e.wps.create(cmWP("fake", "fake", long, sum(v1)), time.Now())
	wp := e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return cond(wp, wasmprovv1alpha1.ConditionPulled, metav1.ConditionFalse, wasmprovv1alpha1.ReasonPullFailed)
	})
	for _, c := range wp.Status.Conditions {
		if len(c.Message) > 1024 || !utf8.ValidString(c.Message) {
			t.Fatalf("condition %s message of %d bytes (valid UTF-8: %t)", c.Type, len(c.Message), utf8.ValidString(c.Message))
		}
	}
	if m := wp.Status.LastRejected.Message; len(m) > 1024 || !utf8.ValidString(m) || !strings.HasPrefix(m, "ConfigMap kube-system/modules has no binaryData key") {
		t.Fatalf("lastRejected message of %d bytes: %.80q", len(m), m)
	}
	ev := e.waitEvent(t, "fake", "Warning PullFailed:")
	if len(ev) > 1024+len("Warning PullFailed: ") {
		t.Fatalf("Event message of %d bytes", len(ev))
	}
}

// New refuses missing parts; Run runs once, and returns when cancelled.
func TestNewAndRun(t *testing.T) {
	if _, err := wasmprovider.New(wasmprovider.Options{}); err == nil {
		t.Fatal("New without Client, Kube and Loader succeeded")
	}
	e := newEnv(t, envOpts{leader: true})
	testwait.Until(t, "HasSynced with no WasmProvider", e.rec.HasSynced)
	// Once the first Run is past its sync, a second one must refuse at
	// once (with a deadline, so a bug fails rather than hangs the test).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.rec.Run(ctx); err == nil {
		t.Fatal("a second Run succeeded")
	}
}
