package v1alpha1_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
)

// zz_generated.deepcopy.go is written by hand, so nothing but these tests
// notices a pointer or slice it forgets to copy. The technique is the one
// of apis/cluster/v1alpha1: fill sets every reachable field of an object to
// a deterministic non-zero value (every pointer allocated, every slice two
// elements long, every map two entries); the copy is then mutated at every
// leaf. A shared pointer, slice backing array or map makes the original
// change too, and it no longer equals a second, independently filled
// reference object.

var timeType = reflect.TypeFor[time.Time]()

func fill(v reflect.Value, depth int) {
	if depth > 20 {
		panic("fill: type nesting too deep (recursive type?) at " + v.Type().String())
	}
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() {
				fill(f, depth+1)
			}
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := 0; i < s.Len(); i++ {
			fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for i := 0; i < 2; i++ {
			k := reflect.New(v.Type().Key()).Elem()
			fill(k, depth+1)
			if k.Kind() == reflect.String {
				// Distinct keys, or the map would have one entry.
				k.SetString(fmt.Sprintf("%s%d", k.String(), i))
			}
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(7)
	case reflect.Interface:
		// runtime.RawExtension.Object stays nil: Raw carries the data, and
		// the API machinery never sets Object on a decoded object.
	default:
		panic("fill: unhandled kind " + v.Kind().String() + " in " + v.Type().String())
	}
}

// mutate changes every leaf reachable from v and returns how many.
func mutate(v reflect.Value) int {
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(v.Interface().(time.Time).Add(time.Hour)))
		return 1
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		return mutate(v.Elem())
	case reflect.Struct:
		n := 0
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() {
				n += mutate(f)
			}
		}
		return n
	case reflect.Slice:
		n := 0
		for i := 0; i < v.Len(); i++ {
			n += mutate(v.Index(i))
		}
		return n
	case reflect.Map:
		// Map elements are not addressable: store a mutated copy of each
		// value back, and add a key; both show through a shared map.
		n := 0
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			n += mutate(e)
			v.SetMapIndex(k, e)
		}
		if v.Type().Key().Kind() == reflect.String {
			k := reflect.New(v.Type().Key()).Elem()
			k.SetString("added-by-mutate")
			v.SetMapIndex(k, reflect.New(v.Type().Elem()).Elem())
			n++
		}
		return n
	case reflect.String:
		v.SetString(v.String() + "-mutated")
		return 1
	case reflect.Bool:
		v.SetBool(!v.Bool())
		return 1
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
		return 1
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
		return 1
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1)
		return 1
	}
	return 0
}

// firstDifference names the first field path at which a and b differ.
func firstDifference(a, b reflect.Value, path string) string {
	if reflect.DeepEqual(a.Interface(), b.Interface()) {
		return ""
	}
	switch a.Kind() {
	case reflect.Pointer:
		if !a.IsNil() && !b.IsNil() {
			return firstDifference(a.Elem(), b.Elem(), path)
		}
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !a.Type().Field(i).IsExported() {
				continue
			}
			if d := firstDifference(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
	case reflect.Slice:
		if a.Len() == b.Len() {
			for i := 0; i < a.Len(); i++ {
				if d := firstDifference(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
					return d
				}
			}
		}
	}
	return path
}

type deepCopyable[T any] interface {
	*T
	DeepCopy() *T
	DeepCopyInto(*T)
}

// checkDeepCopy runs the fill/copy/mutate check for one type and returns
// how many leaves it mutated.
func checkDeepCopy[T any, PT deepCopyable[T]](t *testing.T) int {
	t.Helper()
	orig := PT(new(T))
	fill(reflect.ValueOf(orig).Elem(), 0)
	reference := PT(new(T))
	fill(reflect.ValueOf(reference).Elem(), 0)

	cp := orig.DeepCopy()
	if !reflect.DeepEqual(orig, cp) {
		t.Fatalf("%T: DeepCopy is not reflect.DeepEqual to the original", orig)
	}
	if !apiequality.Semantic.DeepEqual(orig, cp) {
		t.Fatalf("%T: DeepCopy is not apiequality.Semantic.DeepEqual to the original", orig)
	}
	into := PT(new(T))
	orig.DeepCopyInto(into)
	if !reflect.DeepEqual(orig, into) {
		t.Fatalf("%T: DeepCopyInto result differs from the original", orig)
	}

	n := mutate(reflect.ValueOf(cp).Elem())
	if n2 := mutate(reflect.ValueOf(into).Elem()); n == 0 || n != n2 {
		t.Fatalf("%T: mutate changed %d and %d leaves", orig, n, n2)
	}
	if reflect.DeepEqual(cp, reference) {
		t.Fatalf("%T: mutating the copy had no effect; the test is not testing anything", orig)
	}
	if !reflect.DeepEqual(orig, reference) {
		t.Errorf("%T: mutating the deep copy changed the original at %s: a pointer, slice or map is shared",
			orig, firstDifference(reflect.ValueOf(orig).Elem(), reflect.ValueOf(reference).Elem(), "obj"))
	}
	if PT(nil).DeepCopy() != nil {
		t.Errorf("%T: DeepCopy of nil is not nil", orig)
	}
	return n
}

func TestDeepCopyIndependence(t *testing.T) {
	checks := map[string]func(*testing.T) int{
		"WasmProvider":       checkDeepCopy[v1alpha1.WasmProvider],
		"WasmProviderList":   checkDeepCopy[v1alpha1.WasmProviderList],
		"WasmProviderSpec":   checkDeepCopy[v1alpha1.WasmProviderSpec],
		"WasmProviderStatus": checkDeepCopy[v1alpha1.WasmProviderStatus],
		"Source":             checkDeepCopy[v1alpha1.Source],
		"ImageSource":        checkDeepCopy[v1alpha1.ImageSource],
		"ConfigMapSource":    checkDeepCopy[v1alpha1.ConfigMapSource],
		"URLSource":          checkDeepCopy[v1alpha1.URLSource],
		"Pool":               checkDeepCopy[v1alpha1.Pool],
		"Revision":           checkDeepCopy[v1alpha1.Revision],
		"Rejection":          checkDeepCopy[v1alpha1.Rejection],
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
		fill(reflect.ValueOf(obj).Elem(), 0)
		reference := reflect.New(reflect.TypeOf(obj).Elem())
		fill(reference.Elem(), 0)

		cp := obj.DeepCopyObject()
		if reflect.TypeOf(cp) != reflect.TypeOf(obj) {
			t.Errorf("%T.DeepCopyObject returned %T", obj, cp)
			continue
		}
		if cp == obj || !reflect.DeepEqual(cp, obj) {
			t.Errorf("%T.DeepCopyObject: want an equal, distinct object", obj)
		}
		if mutate(reflect.ValueOf(cp).Elem()) == 0 {
			t.Fatalf("%T: nothing to mutate", cp)
		}
		if !reflect.DeepEqual(obj, reference.Interface()) {
			t.Errorf("%T.DeepCopyObject shares state with the original at %s", obj,
				firstDifference(reflect.ValueOf(obj).Elem(), reference.Elem(), "obj"))
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
			firstDifference(reflect.ValueOf(orig).Elem(), reflect.ValueOf(reference).Elem(), "obj"))
	}
}
