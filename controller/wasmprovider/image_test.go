package wasmprovider_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wasmprovv1alpha1 "github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/controller/wasmprovider"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
	testwait "github.com/wasmprov/wasmprov/internal/testing/wait"
	"github.com/wasmprov/wasmprov/runtime/oci"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ready(wp *wasmprovv1alpha1.WasmProvider) string {
	return cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionTrue, wasmprovv1alpha1.ReasonServing)
}

// An image by digest serves; a new digest swaps in (revisions [new, old],
// Swapped); a digest the registry does not have is refused with the new
// one still serving; pinning the spec back to the first digest serves it
// again from the store, asking the registry nothing.
func TestImageLifecycle(t *testing.T) {
	e := newEnv(t, envOpts{leader: true})
	ref1, d1 := e.pushVersion(t, "v1")
	ref2, d2 := e.pushVersion(t, "v2")
	e.wps.create(imageWP("fake", "fake", ref1), time.Now())
	wp := e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(serving(wp, d1), ready(wp),
			cond(wp, wasmprovv1alpha1.ConditionPulled, metav1.ConditionTrue, wasmprovv1alpha1.ReasonPulled),
			cond(wp, wasmprovv1alpha1.ConditionVerified, metav1.ConditionTrue, wasmprovv1alpha1.ReasonNotRequired),
			cond(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionFalse, wasmprovv1alpha1.ReasonUpToDate))
	})
	if wp.Status.Serving.Ref != ref1 || wp.Status.Serving.ModuleSHA256 != sum(version(t, "v1")) {
		t.Fatalf("serving = %+v", wp.Status.Serving)
	}
	e.waitRegistry(t, "fake", d1)
	e.waitEvent(t, "fake", "Normal Loaded: "+d1)

	e.wps.updateSpec(t, "fake", func(s *wasmprovv1alpha1.WasmProviderSpec) { s.Source.Image.Ref = ref2 })
	wp = e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string { return all(serving(wp, d2), ready(wp)) })
	if r := wp.Status.Revisions; len(r) != 2 || r[0].Digest != d2 || r[1].Digest != d1 {
		t.Fatalf("revisions = %+v, want [%s %s]", r, d2, d1)
	}
	e.waitRegistry(t, "fake", d2)
	e.waitEvent(t, "fake", "Normal Swapped: "+d1+" -> "+d2)

	missing := e.oci.Host + "/providers/fake@sha256:" + strings.Repeat("ab", 32)
	e.wps.updateSpec(t, "fake", func(s *wasmprovv1alpha1.WasmProviderSpec) { s.Source.Image.Ref = missing })
	wp = e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(serving(wp, d2), ready(wp),
			cond(wp, wasmprovv1alpha1.ConditionPulled, metav1.ConditionFalse, wasmprovv1alpha1.ReasonPullFailed),
			cond(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionTrue, wasmprovv1alpha1.ReasonPreviousServing))
	})
	if rej := wp.Status.LastRejected; rej == nil || rej.Ref != missing || rej.Reason != wasmprovv1alpha1.ReasonPullFailed || rej.Message == "" {
		t.Fatalf("lastRejected = %+v", rej)
	}
	e.waitEvent(t, "fake", "Warning PullFailed:")
	if got := e.registryServes("fake"); got != d2 {
		t.Fatalf("after the refused pull the registry serves %q, want %q", got, d2)
	}

	// Back to the first digest: from the store, no request to the
	// registry.
	before := e.oci.Requests()
	e.wps.updateSpec(t, "fake", func(s *wasmprovv1alpha1.WasmProviderSpec) { s.Source.Image.Ref = ref1 })
	wp = e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(serving(wp, d1), ready(wp),
			cond(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionFalse, wasmprovv1alpha1.ReasonUpToDate))
	})
	e.waitRegistry(t, "fake", d1)
	if n := e.oci.Requests() - before; n != 0 {
		t.Fatalf("pinning back to a revision made %d registry requests, want 0", n)
	}
	if r := wp.Status.Revisions; len(r) != 2 || r[0].Digest != d1 || r[1].Digest != d2 {
		t.Fatalf("revisions after the rollback = %+v, want [%s %s]", r, d1, d2)
	}
	e.waitEvent(t, "fake", "Normal RolledBack: "+d2+" -> "+d1)
}

// A verify block the verifier refuses: Verified False, nothing serving.
func TestImageVerificationRefused(t *testing.T) {
	e := newEnv(t, envOpts{leader: true})
	ref1, _ := e.pushVersion(t, "v1")
	wp := imageWP("fake", "fake", ref1)
	wp.Spec.Verify = raw(`{"anyOf":[{"publicKey":"` + refuseVerify + `"}]}`)
	e.wps.create(wp, time.Now())
	got := e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(cond(wp, wasmprovv1alpha1.ConditionPulled, metav1.ConditionTrue, wasmprovv1alpha1.ReasonPulled),
			cond(wp, wasmprovv1alpha1.ConditionVerified, metav1.ConditionFalse, wasmprovv1alpha1.ReasonVerifyFailed),
			cond(wp, wasmprovv1alpha1.ConditionReady, metav1.ConditionFalse, wasmprovv1alpha1.ReasonVerifyFailed),
			cond(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionTrue, wasmprovv1alpha1.ReasonNothingServing))
	})
	if !strings.Contains(condMessage(got, wasmprovv1alpha1.ConditionVerified), "no signature satisfies") {
		t.Fatalf("Verified message %q", condMessage(got, wasmprovv1alpha1.ConditionVerified))
	}
	if e.registryServes("fake") != "" {
		t.Fatal("an unverified artifact serves")
	}
	e.waitEvent(t, "fake", "Warning VerificationFailed:")

	// A verify block the verifier accepts: Verified True and serving.
	e.wps.updateSpec(t, "fake", func(s *wasmprovv1alpha1.WasmProviderSpec) {
		s.Verify = raw(`{"anyOf":[{"publicKey":"accepted"}]}`)
	})
	e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(ready(wp), cond(wp, wasmprovv1alpha1.ConditionVerified, metav1.ConditionTrue, wasmprovv1alpha1.ReasonVerified))
	})
}

// An image behind basic auth is pulled with the pull Secret's
// .dockerconfigjson; the spec's pool overrides its policy's, its
// idleTimeout included.
func TestImagePullSecretAndPool(t *testing.T) {
	e := newEnv(t, envOpts{leader: true})
	auth := testregistry.Start(t, testregistry.Options{User: "u", Password: "p"})
	wasm := version(t, "v1")
	e.precompile(t, wasm)
	dc := testregistry.DockerConfig(t, auth.Host, "u", "p")
	pusher := e.ociClientWith(t, dc)
	d, err := pusher.Push(context.Background(), wasm, auth.Host+"/providers/fake:v1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := readFile(t, dc)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "pull"},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: cfg}}
	if _, err := e.kube.CoreV1().Secrets("kube-system").Create(context.Background(), sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wp := imageWP("fake", "fake", auth.Host+"/providers/fake@"+d.String())
	// Without the Secret first: refused.
	e.wps.create(wp, time.Now())
	e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return cond(wp, wasmprovv1alpha1.ConditionPulled, metav1.ConditionFalse, wasmprovv1alpha1.ReasonPullFailed)
	})
	e.wps.updateSpec(t, "fake", func(s *wasmprovv1alpha1.WasmProviderSpec) {
		s.Source.Image.PullSecret = &corev1.SecretReference{Namespace: "kube-system", Name: "pull"}
		s.Policy = raw(`{"poolSize":2}`)
		// An idle timeout makes the pool lazy: the smoke call's
		// instance is closed soon after, none is kept.
		s.Pool = &wasmprovv1alpha1.Pool{Size: 3, IdleTimeout: &metav1.Duration{Duration: 100 * time.Millisecond}}
	})
	got := e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string { return all(serving(wp, d.String()), ready(wp)) })
	if _, ok := e.clients.Load(string(cfg)); !ok {
		t.Fatal("NewOCIClient never got the pull Secret's content")
	}
	for _, s := range e.reg.Status() {
		if s.Name == "fake" && s.PoolSize != 3 {
			t.Fatalf("pool size %d, want spec.pool's 3", s.PoolSize)
		}
	}
	idleFrom := time.Now()
	testwait.For(t, "the idle pool emptied", func() (bool, string) {
		var live int64 = -1
		for _, s := range e.reg.Status() {
			if s.Name == "fake" {
				live = s.Instances
			}
		}
		return live == 0, fmt.Sprintf("%d instances live", live)
	})
	if d := time.Since(idleFrom); d > 10*time.Second {
		t.Fatalf("instances still live %v after spec.pool.idleTimeout 100ms, want at most 10 s", d)
	}
	for _, c := range got.Status.Conditions {
		if strings.Contains(c.Message, "u:p") || strings.Contains(c.Message, string(cfg)) {
			t.Fatalf("condition %s leaks the credentials: %q", c.Type, c.Message)
		}
	}
}

// A tag with pull policy Always is resolved again at every poll: moving
// the tag swaps the new digest in. The revisions are pinned in the store
// under the WasmProvider, and unpinned when it is deleted.
func TestImageTagPollAndPins(t *testing.T) {
	var pins *pinRecorder
	e := newEnv(t, envOpts{leader: true, noStart: true, mutate: func(o *wasmprovider.Options) {
		pins = &pinRecorder{store: o.Store.(*oci.Store)}
		o.Store = pins
	}})
	e.start(t)
	_, d1 := e.pushVersion(t, "v1")
	tag := e.oci.Host + "/providers/fake:stable"
	if _, err := e.push.Push(context.Background(), version(t, "v1"), tag); err != nil {
		t.Fatal(err)
	}
	e.wps.create(imageWP("fake", "fake", tag), time.Now())
	e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string { return all(serving(wp, d1), ready(wp)) })
	// Polls of an unchanged tag resolve it again and change nothing.
	writes := e.wps.writeCount()
	resolves := e.oci.Requests()
	e.waitReconciles(t, "ok", 2)
	if w := e.wps.writeCount(); w != writes {
		t.Fatalf("polls of an unchanged tag wrote status %d more times", w-writes)
	}
	if e.oci.Requests() == resolves {
		t.Fatal("the tag was not resolved again at the polls")
	}
	v2 := version(t, "v2")
	e.precompile(t, v2)
	d2, err := e.push.Push(context.Background(), v2, tag)
	if err != nil {
		t.Fatal(err)
	}
	wp := e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string { return all(serving(wp, d2.String()), ready(wp)) })
	if wp.Status.Serving.Ref != tag {
		t.Fatalf("serving ref %q, want %q", wp.Status.Serving.Ref, tag)
	}
	e.waitEvent(t, "fake", "Normal Swapped: "+d1+" -> "+d2.String())
	testwait.For(t, fmt.Sprintf("pins [%s %s]", d2, d1), func() (bool, string) {
		got, _ := pins.get("wasmprovider/fake")
		return strings.Join(got, ",") == d2.String()+","+d1, fmt.Sprintf("pinned %q", got)
	})
	e.wps.delete("fake")
	e.waitRegistry(t, "fake", "")
	testwait.For(t, "the deleted WasmProvider's revisions unpinned", func() (bool, string) {
		got, ok := pins.get("wasmprovider/fake")
		return ok && len(got) == 0, fmt.Sprintf("pinned %q (set: %t)", got, ok)
	})
}

// A tag whose registry is down when its WasmProvider is reconciled (a
// controller restarting during an outage) serves what the tag last
// resolved to with this store: Ready, with Pulled False and Degraded True
// for the reason Stale; when the registry is back, a poll resolves the
// tag again and the staleness clears.
func TestImageTagStale(t *testing.T) {
	e := newEnv(t, envOpts{leader: true})
	_, d1 := e.pushVersion(t, "v1")
	tag := e.oci.Host + "/providers/fake:stable"
	ctx := context.Background()
	if _, err := e.push.Push(ctx, version(t, "v1"), tag); err != nil {
		t.Fatal(err)
	}
	// What an earlier controller process left in the store.
	earlier, err := oci.New(oci.Options{Store: e.store, PlainHTTP: true, DockerConfig: filepath.Join(t.TempDir(), "none.json")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := earlier.Pull(ctx, tag); err != nil {
		t.Fatal(err)
	}
	e.oci.SetDown(true)
	e.wps.create(imageWP("fake", "fake", tag), time.Now())
	e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(serving(wp, d1), ready(wp),
			cond(wp, wasmprovv1alpha1.ConditionPulled, metav1.ConditionFalse, wasmprovv1alpha1.ReasonStale),
			cond(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionTrue, wasmprovv1alpha1.ReasonStale))
	})
	e.oci.SetDown(false)
	e.waitWP(t, "fake", func(wp *wasmprovv1alpha1.WasmProvider) string {
		return all(serving(wp, d1), ready(wp),
			cond(wp, wasmprovv1alpha1.ConditionPulled, metav1.ConditionTrue, wasmprovv1alpha1.ReasonPulled),
			cond(wp, wasmprovv1alpha1.ConditionDegraded, metav1.ConditionFalse, wasmprovv1alpha1.ReasonUpToDate))
	})
}
