package conformance_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/conformance"
	"github.com/wasmprov/wasmprov/conformance/testdata/refcloud/ref"
	"github.com/wasmprov/wasmprov/internal/testing/kubefake"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// keyedSpec keeps the token in a Secret, as upstream manifests do.
const keyedSpec = `{"cloudProvider":"minicloud","operatingSystem":"ubuntu",
 "cloudProviderSpec":{"endpoint":"${CLOUD_URL}",
  "token":{"secretKeyRef":{"namespace":"kube-system","name":"minicloud","key":"token"}}}}`

func tokenSecret() *kubefake.Clientset {
	return kubefake.New(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "minicloud"},
		Data:       map[string][]byte{"token": []byte(refToken)},
	})
}

// Providers that find their instance by what they wrote on the Machine in
// Create — an annotation, or spec.providerID — pass the stateful profile
// and its transport faults:
// the suite hands every call the Machine as machine_update left it, as
// machine-controller does. Their token is a secretKeyRef, resolved through
// Config.Kube.
func TestKeyedProvidersPassStateful(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		seen string // what the updated Machine carries, in the notes
	}{
		{"conformance/testdata/keyed/annotation", ref.Annotation},
		{"conformance/testdata/keyed/providerid", "minicloud://"},
	} {
		t.Run(tc.dir[strings.LastIndex(tc.dir, "/")+1:], func(t *testing.T) {
			t.Parallel() // the faults profile mostly waits on held responses
			cfg := refConfig(t, tc.dir)
			cfg.ProviderSpec = json.RawMessage(keyedSpec)
			cfg.Kube = tokenSecret()
			cloud, url := startCloud(t)
			cfg.CloudURL = url
			// The faults profile: every check, the faults.* too.
			cfg.Profile = conformance.ProfileFaults
			rep := conformance.RunT(t, cfg)
			if c := rep.Counts(); c.Skip != 0 || c.Warn != 0 || c.Fail != 0 {
				t.Errorf("counts %+v, want every check passed", c)
			}
			res := rep.Result("create.idempotent")
			if res == nil || !strings.Contains(strings.Join(res.Notes, "\n"), "after a conflict, re-applied") {
				t.Errorf("create.idempotent has no note of the Machine updates: %+v", res)
			}
			if left := cloud.Instances(); len(left) != 0 {
				t.Errorf("the run left instances behind: %v", left)
			}
		})
	}
}

// Without a Kubernetes client the same provider cannot read its token: the
// client in Config.Kube is what the host's config_var used.
func TestKeyedProviderNeedsKube(t *testing.T) {
	cfg := refConfig(t, "conformance/testdata/keyed/annotation")
	cfg.ProviderSpec = json.RawMessage(keyedSpec)
	_, cfg.CloudURL = startCloud(t)
	cfg.Checks = []string{"validate.accepts-valid"}
	rep, err := conformance.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Result("validate.accepts-valid"); r.Status != conformance.Fail || !strings.Contains(r.Message, "token") {
		t.Fatalf("without Config.Kube, validate.accepts-valid did not fail resolving the token:\n%s", text(rep))
	}
}

// A failing check says what the provider received: here the Machine as
// Create left it (its finalizer persisted, no annotation recorded), so the
// author sees that Get got the updated Machine and the key is missing.
func TestFailureNamesTheMachineReceived(t *testing.T) {
	cfg := refConfig(t, "conformance/testdata/broken/forgets-key")
	_, cfg.CloudURL = startCloud(t)
	cfg.Checks = []string{"create.get-same-id"}
	rep, err := conformance.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Result("create.get-same-id")
	for _, want := range []string{"Get after Create failed", "want instance{", "Get received: Machine wpc-create-get-same-id-0",
		"finalizers [" + ref.Finalizer + "]"} {
		if r.Status != conformance.Fail || !strings.Contains(r.Message, want) {
			t.Errorf("failure message lacks %q:\n%s", want, r.Message)
		}
	}
	if strings.Contains(r.Message, ref.Annotation) {
		t.Errorf("the Machine carries the annotation the provider never wrote:\n%s", r.Message)
	}
}

// A selector that matches no check is an error naming the valid IDs, not
// a run of zero checks that passes.
func TestUnknownCheckIsAnError(t *testing.T) {
	for _, sel := range []string{"nosuchcheck", "create.get"} {
		_, err := conformance.Run(t.Context(), conformance.Config{
			Wasm: []byte("\x00asm\x01\x00\x00\x00"), ProviderSpec: json.RawMessage(`{}`), Checks: []string{sel},
		})
		if err == nil || !strings.Contains(err.Error(), `"`+sel+`"`) || !strings.Contains(err.Error(), "create.get-same-id") {
			t.Errorf("Checks %q: error %v, want one naming it and listing the check IDs", sel, err)
		}
	}
}

// RunT logs a warning and does not fail the test: the no-size-label
// provider only breaks a SHOULD.
func TestRunTWarningDoesNotFail(t *testing.T) {
	cfg := refConfig(t, "conformance/testdata/broken/no-size-label")
	_, cfg.CloudURL = startCloud(t)
	cfg.Checks = []string{"metrics."}
	rep := conformance.RunT(t, cfg)
	if got := rep.Warned(); len(got) != 1 || got[0] != "metrics.size-label" || !rep.Passed() {
		t.Fatalf("warned %v, passed %v; want only metrics.size-label warned and a passing run", got, rep.Passed())
	}
}
