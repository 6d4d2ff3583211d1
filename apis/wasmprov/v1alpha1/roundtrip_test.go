package v1alpha1_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/testing/apitest"
)

// fullWasmProvider returns a WasmProvider with every field of the API set
// to a value that survives JSON (times at second precision, RawExtensions
// holding compact JSON). It sets all three sources at once, which the API
// server refuses (exactly one is allowed) but which the encoding does not
// care about, so that each of them is round-tripped.
func fullWasmProvider() *v1alpha1.WasmProvider {
	t0 := metav1.NewTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(time.Date(2026, 12, 1, 9, 30, 15, 0, time.UTC))
	const digest = "sha256:7eeb4a0958e5574023aa359780e0be01cb55a6cdf61d27fac503453203390e66"
	const module = "bef06d262f5a1236f1faf8dd4335e8d39bda0454a3e5e5b0e3f0cb1685ba5a54"
	return &v1alpha1.WasmProvider{
		TypeMeta: metav1.TypeMeta{APIVersion: "wasmprov.io/v1alpha1", Kind: "WasmProvider"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              "hetzner",
			UID:               "9b0c2f4e-0c7a-4d35-9f67-1f3d2e5a7b10",
			ResourceVersion:   "4711",
			Generation:        3,
			CreationTimestamp: t0,
			Labels:            map[string]string{"team": "platform"},
			Annotations:       map[string]string{"note": "example"},
		},
		Spec: v1alpha1.WasmProviderSpec{
			CloudProvider: "hetzner",
			Source: v1alpha1.Source{
				Image: &v1alpha1.ImageSource{
					Ref:        "registry.example.com/providers/hetzner@" + digest,
					PullPolicy: v1alpha1.PullIfNotPresent,
					PullSecret: &corev1.SecretReference{Namespace: "kube-system", Name: "wasmprov-registry"},
				},
				ConfigMap: &v1alpha1.ConfigMapSource{Namespace: "kube-system", Name: "hetzner-provider", Key: "hetzner.wasm", SHA256: module},
				URL:       &v1alpha1.URLSource{URL: "https://downloads.example.com/hetzner.wasm", SHA256: module},
			},
			Verify:               &runtime.RawExtension{Raw: []byte(`{"anyOf":[{"publicKey":"-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n"}],"minMatches":1}`)},
			Policy:               &runtime.RawExtension{Raw: []byte(`{"allowedHosts":["api.hetzner.cloud"],"callTimeout":"2m","poolSize":8}`)},
			Pool:                 &v1alpha1.Pool{Size: 4, Prewarm: 2, MaxCallsPerInstance: -1, IdleTimeout: &metav1.Duration{Duration: 90 * time.Second}},
			RevisionHistoryLimit: 7,
		},
		Status: v1alpha1.WasmProviderStatus{
			ObservedGeneration: 3,
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 3, LastTransitionTime: t0, Reason: v1alpha1.ReasonServing, Message: "serving " + digest},
				{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, ObservedGeneration: 3, LastTransitionTime: t1, Reason: v1alpha1.ReasonPreviousServing, Message: "signature policy not satisfied"},
			},
			Serving:      &v1alpha1.Revision{Digest: digest, Ref: "registry.example.com/providers/hetzner@" + digest, ModuleSHA256: module, Since: t0},
			LastRejected: &v1alpha1.Rejection{Digest: "sha256:" + module, Ref: "registry.example.com/providers/hetzner:1.3", Reason: v1alpha1.ReasonVerifyFailed, Message: "not signed", Time: t1},
			Revisions: []v1alpha1.Revision{
				{Digest: digest, Ref: "registry.example.com/providers/hetzner@" + digest, ModuleSHA256: module, Since: t0},
				{Digest: "sha256:" + module, Ref: "kube-system/hetzner-provider/hetzner.wasm", ModuleSHA256: module, Since: t1},
			},
		},
	}
}

func TestFullObjectRoundTripJSON(t *testing.T) {
	orig := fullWasmProvider()
	if n := countZeroFields(reflect.ValueOf(orig.Spec)) + countZeroFields(reflect.ValueOf(orig.Status)); n != 0 {
		t.Fatalf("fullWasmProvider leaves %d field(s) of spec or status unset; the round trip would not cover them", n)
	}
	j, err := json.Marshal(orig)
	if err != nil {
		t.Fatal(err)
	}
	var back v1alpha1.WasmProvider
	if err := apitest.StrictUnmarshal(j, &back); err != nil {
		t.Fatalf("strict decode of our own encoding: %v\n%s", err, j)
	}
	if !apiequality.Semantic.DeepEqual(orig, &back) {
		t.Errorf("round trip changed the object:\nwant %#v\ngot  %#v", orig, &back)
	}
	// A second encoding is byte-identical: nothing is normalised on the
	// way back (RawExtension bytes included).
	j2, err := json.Marshal(&back)
	if err != nil {
		t.Fatal(err)
	}
	if string(j) != string(j2) {
		t.Errorf("re-encoding differs:\n%s\n%s", j, j2)
	}
}

// countZeroFields counts the struct fields reachable from v (through
// pointers, slices and structs of this API) that hold their zero value.
// metav1 and corev1 types count as leaves.
func countZeroFields(v reflect.Value) int {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return 1
		}
		return countZeroFields(v.Elem())
	case reflect.Slice:
		if v.Len() == 0 {
			return 1
		}
		n := 0
		for i := 0; i < v.Len(); i++ {
			n += countZeroFields(v.Index(i))
		}
		return n
	case reflect.Struct:
		if v.Type().PkgPath() != reflect.TypeFor[v1alpha1.WasmProvider]().PkgPath() {
			if v.IsZero() {
				return 1
			}
			return 0
		}
		n := 0
		for i := 0; i < v.NumField(); i++ {
			n += countZeroFields(v.Field(i))
		}
		return n
	}
	if v.IsZero() {
		return 1
	}
	return 0
}

func TestUnknownFieldIsRefused(t *testing.T) {
	// The strict decode above must be able to fail: a misspelt field in the
	// spec is an error, while any field inside policy (a RawExtension,
	// decoded strictly later by the controller) passes this stage.
	const bad = `{"apiVersion":"wasmprov.io/v1alpha1","kind":"WasmProvider","metadata":{"name":"x"},` +
		`"spec":{"cloudProvider":"x","source":{"url":{"url":"https://e.example/x.wasm","sha256":"00"}},"revisionHistorylimit":3}}`
	var wp v1alpha1.WasmProvider
	if err := apitest.StrictUnmarshal([]byte(bad), &wp); err == nil {
		t.Error("strict decode accepted spec.revisionHistorylimit (wrong case)")
	}
	const ok = `{"apiVersion":"wasmprov.io/v1alpha1","kind":"WasmProvider","metadata":{"name":"x"},` +
		`"spec":{"cloudProvider":"x","source":{"url":{"url":"https://e.example/x.wasm","sha256":"00"}},"policy":{"anything":1}}}`
	if err := apitest.StrictUnmarshal([]byte(ok), &wp); err != nil {
		t.Errorf("strict decode refused a field inside the policy RawExtension: %v", err)
	}
}

func TestSchemeRegistration(t *testing.T) {
	scheme := apitest.Scheme(t, v1alpha1.AddToScheme)
	for kind, want := range map[string]reflect.Type{
		"WasmProvider":     reflect.TypeFor[v1alpha1.WasmProvider](),
		"WasmProviderList": reflect.TypeFor[v1alpha1.WasmProviderList](),
	} {
		gvk := schema.GroupVersionKind{Group: "wasmprov.io", Version: "v1alpha1", Kind: kind}
		if got := scheme.AllKnownTypes()[gvk]; got != want {
			t.Errorf("scheme type for %v = %v, want %v", gvk, got, want)
		}
	}
	kinds, _, err := scheme.ObjectKinds(&v1alpha1.WasmProvider{})
	if err != nil || len(kinds) != 1 || kinds[0] != v1alpha1.SchemeGroupVersion.WithKind("WasmProvider") {
		t.Errorf("ObjectKinds(WasmProvider) = %v, %v", kinds, err)
	}
	// metav1.AddToGroupVersion adds what client-go needs to list, watch
	// and delete in this group version.
	for _, kind := range []string{"ListOptions", "DeleteOptions", "GetOptions", "WatchEvent"} {
		if !scheme.Recognizes(v1alpha1.SchemeGroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not recognise %s in %v", kind, v1alpha1.SchemeGroupVersion)
		}
	}
	if v1alpha1.SchemeGroupVersion.String() != "wasmprov.io/v1alpha1" || v1alpha1.Resource != "wasmproviders" {
		t.Errorf("group version %v, resource %q", v1alpha1.SchemeGroupVersion, v1alpha1.Resource)
	}

	// Encoding through the scheme's codec sets apiVersion and kind.
	codecs := serializer.NewCodecFactory(scheme)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer")
	}
	wp := fullWasmProvider()
	wp.TypeMeta = metav1.TypeMeta{}
	out, err := runtime.Encode(codecs.EncoderForVersion(info.Serializer, v1alpha1.SchemeGroupVersion), wp)
	if err != nil {
		t.Fatal(err)
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(out, &tm); err != nil {
		t.Fatal(err)
	}
	if tm.APIVersion != "wasmprov.io/v1alpha1" || tm.Kind != "WasmProvider" {
		t.Errorf("encoded TypeMeta = %+v", tm)
	}
}

func TestConstantValues(t *testing.T) {
	// These strings are stored in status and matched by users' tooling
	// (kubectl wait --for=condition=Ready); they must not drift.
	for got, want := range map[string]string{
		string(v1alpha1.PullIfNotPresent): "IfNotPresent",
		string(v1alpha1.PullAlways):       "Always",
		v1alpha1.ConditionPulled:          "Pulled",
		v1alpha1.ConditionVerified:        "Verified",
		v1alpha1.ConditionReady:           "Ready",
		v1alpha1.ConditionDegraded:        "Degraded",
		v1alpha1.ReasonVerifyFailed:       "VerificationFailed",
		v1alpha1.ReasonPreviousServing:    "PreviousVersionServing",
	} {
		if got != want {
			t.Errorf("constant = %q, want %q", got, want)
		}
	}
}
