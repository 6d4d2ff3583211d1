package v1alpha1_test

import (
	"reflect"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/deepcopytest"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
)

// zz_generated.deepcopy.go is written by hand, so nothing but these tests
// notices a pointer or slice it forgets to copy. internal/testing/deepcopytest
// does the checking: Fill sets every reachable field of an object to
// a deterministic non-zero value (every pointer allocated, every slice two
// elements long, every map two entries); the copy is then mutated at every
// leaf. A shared pointer, slice backing array or map makes the original
// change too, and it no longer equals a second, independently filled
// reference object.

func TestDeepCopyIndependence(t *testing.T) {
	checks := map[string]func(*testing.T) int{
		"WasmProvider":       deepcopytest.Check[v1alpha1.WasmProvider],
		"WasmProviderList":   deepcopytest.Check[v1alpha1.WasmProviderList],
		"WasmProviderSpec":   deepcopytest.Check[v1alpha1.WasmProviderSpec],
		"WasmProviderStatus": deepcopytest.Check[v1alpha1.WasmProviderStatus],
		"Source":             deepcopytest.Check[v1alpha1.Source],
		"ImageSource":        deepcopytest.Check[v1alpha1.ImageSource],
		"ConfigMapSource":    deepcopytest.Check[v1alpha1.ConfigMapSource],
		"URLSource":          deepcopytest.Check[v1alpha1.URLSource],
		"Pool":               deepcopytest.Check[v1alpha1.Pool],
		"Revision":           deepcopytest.Check[v1alpha1.Revision],
		"Rejection":          deepcopytest.Check[v1alpha1.Rejection],
	}
	leaves := map[string]int{}
	for name, check := range checks {
		t.Run(name, func(t *testing.T) { leaves[name] = check(t) })
	}
	// A list holds two filled WasmProviders (and its own ListMeta): if the
	// list's copy did not reach into its items it would mutate fewer.
	if l, p := leaves["WasmProviderList"], leaves["WasmProvider"]; l <= 2*p {
		t.Errorf("WasmProviderList mutated %d leaves, want more than twice WasmProvider's %d", l, p)
	}
}

func TestDeepCopyObject(t *testing.T) {
	for _, obj := range []runtime.Object{&v1alpha1.WasmProvider{}, &v1alpha1.WasmProviderList{}} {
		deepcopytest.Fill(reflect.ValueOf(obj).Elem())
		reference := reflect.New(reflect.TypeOf(obj).Elem())
		deepcopytest.Fill(reference.Elem())

		cp := obj.DeepCopyObject()
		if reflect.TypeOf(cp) != reflect.TypeOf(obj) {
			t.Errorf("%T.DeepCopyObject returned %T", obj, cp)
			continue
		}
		if cp == obj || !reflect.DeepEqual(cp, obj) {
			t.Errorf("%T.DeepCopyObject: want an equal, distinct object", obj)
		}
		if deepcopytest.Mutate(reflect.ValueOf(cp).Elem()) == 0 {
			t.Fatalf("%T: nothing to mutate", cp)
		}
		if !reflect.DeepEqual(obj, reference.Interface()) {
			t.Errorf("%T.DeepCopyObject shares state with the original at %s", obj,
				deepcopytest.FirstDifference(reflect.ValueOf(obj).Elem(), reference.Elem(), "obj"))
		}
	}

	var nilWP *v1alpha1.WasmProvider
	if got := nilWP.DeepCopyObject(); got != nil {
		t.Errorf("nil WasmProvider DeepCopyObject = %#v, want untyped nil", got)
	}
	var nilList *v1alpha1.WasmProviderList
	if got := nilList.DeepCopyObject(); got != nil {
		t.Errorf("nil WasmProviderList DeepCopyObject = %#v, want untyped nil", got)
	}
}

func TestDeepCopyRealisticObject(t *testing.T) {
	// A readable spot check, beside the exhaustive one: the fields a
	// reconciler is most likely to write on a copy from an informer cache.
	orig := fullWasmProvider()
	reference := fullWasmProvider()

	cp := orig.DeepCopy()
	cp.Labels["team"] = "changed"
	cp.Spec.Source.Image.Ref = "changed"
	cp.Spec.Source.Image.PullSecret.Name = "changed"
	cp.Spec.Verify.Raw[0] = ' '
	cp.Spec.Policy.Raw[0] = ' '
	cp.Spec.Pool.Size = 99
	cp.Status.Conditions[0].Status = "Unknown"
	cp.Status.Serving.Digest = "changed"
	cp.Status.Serving.Since.Time = cp.Status.Serving.Since.Add(time.Hour)
	cp.Status.LastRejected.Reason = "changed"
	cp.Status.Revisions[0].Digest = "changed"
	cp.Status.Revisions = append(cp.Status.Revisions[:1], v1alpha1.Revision{Digest: "appended"})

	if !apiequality.Semantic.DeepEqual(orig, reference) {
		t.Errorf("changing the copy changed the original at %s",
			deepcopytest.FirstDifference(reflect.ValueOf(orig).Elem(), reflect.ValueOf(reference).Elem(), "obj"))
	}
}
