package v1alpha1_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
)

// The DeepCopy tests work on objects in which every reachable field is set:
// fill walks a type with reflection and sets every settable field to a
// deterministic non-zero value, allocating every pointer, giving every
// slice two elements and every map two entries. A second fill of a fresh
// object therefore yields an independent, identical reference value.
//
// mutate then changes every leaf reachable from the copy, through every
// pointer, slice and map. If DeepCopy shares any pointer, slice backing
// array or map with the original, the original changes too and no longer
// equals the reference value.

var timeType = reflect.TypeFor[time.Time]()

func fill(v reflect.Value, depth int) {
	if depth > 20 {
		panic("fill: type nesting too deep (recursive type?) at " + v.Type().String())
	}
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)))
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
				k.SetString(k.String() + string(rune('a'+i)))
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
		// runtime.RawExtension.Object: left nil; Raw carries the data.
	default:
		panic("fill: unhandled kind " + v.Kind().String() + " in " + v.Type().String())
	}
}

// mutate changes every leaf reachable from v and returns how many it
// changed.
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
		// Map elements are not addressable: replace each value by a mutated
		// copy, and add a key, both visible through a shared map.
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
// the number of leaves mutated, so callers can see it reached deep.
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
	n2 := mutate(reflect.ValueOf(into).Elem())
	if n == 0 || n != n2 {
		t.Fatalf("%T: mutate changed %d and %d leaves", orig, n, n2)
	}
	if reflect.DeepEqual(cp, reference) {
		t.Fatalf("%T: mutating the copy had no effect; the test is not testing anything", orig)
	}
	if !reflect.DeepEqual(orig, reference) {
		t.Errorf("%T: mutating the deep copy changed the original at %s: a pointer, slice or map is shared",
			orig, firstDifference(reflect.ValueOf(orig).Elem(), reflect.ValueOf(reference).Elem(), "obj"))
	}
	if (PT)(nil).DeepCopy() != nil {
		t.Errorf("%T: DeepCopy of nil is not nil", orig)
	}
	return n
}

func TestDeepCopyIndependence(t *testing.T) {
	checks := map[string]func(*testing.T) int{
		"Machine":                        checkDeepCopy[v1alpha1.Machine],
		"MachineList":                    checkDeepCopy[v1alpha1.MachineList],
		"MachineSpec":                    checkDeepCopy[v1alpha1.MachineSpec],
		"MachineStatus":                  checkDeepCopy[v1alpha1.MachineStatus],
		"MachineVersionInfo":             checkDeepCopy[v1alpha1.MachineVersionInfo],
		"LastOperation":                  checkDeepCopy[v1alpha1.LastOperation],
		"ProviderSpec":                   checkDeepCopy[v1alpha1.ProviderSpec],
		"ProviderSpecSource":             checkDeepCopy[v1alpha1.ProviderSpecSource],
		"MachineClassRef":                checkDeepCopy[v1alpha1.MachineClassRef],
		"MachineSet":                     checkDeepCopy[v1alpha1.MachineSet],
		"MachineSetList":                 checkDeepCopy[v1alpha1.MachineSetList],
		"MachineSetSpec":                 checkDeepCopy[v1alpha1.MachineSetSpec],
		"MachineSetStatus":               checkDeepCopy[v1alpha1.MachineSetStatus],
		"MachineTemplateSpec":            checkDeepCopy[v1alpha1.MachineTemplateSpec],
		"MachineDeployment":              checkDeepCopy[v1alpha1.MachineDeployment],
		"MachineDeploymentList":          checkDeepCopy[v1alpha1.MachineDeploymentList],
		"MachineDeploymentSpec":          checkDeepCopy[v1alpha1.MachineDeploymentSpec],
		"MachineDeploymentStrategy":      checkDeepCopy[v1alpha1.MachineDeploymentStrategy],
		"MachineRollingUpdateDeployment": checkDeepCopy[v1alpha1.MachineRollingUpdateDeployment],
		"MachineDeploymentStatus":        checkDeepCopy[v1alpha1.MachineDeploymentStatus],
		"MachineClass":                   checkDeepCopy[v1alpha1.MachineClass],
		"MachineClassList":               checkDeepCopy[v1alpha1.MachineClassList],
	}
	for name, check := range checks {
		t.Run(name, func(t *testing.T) { check(t) })
	}
}

func TestDeepCopyObject(t *testing.T) {
	objs := []runtime.Object{
		&v1alpha1.Machine{}, &v1alpha1.MachineList{},
		&v1alpha1.MachineSet{}, &v1alpha1.MachineSetList{},
		&v1alpha1.MachineDeployment{}, &v1alpha1.MachineDeploymentList{},
		&v1alpha1.MachineClass{}, &v1alpha1.MachineClassList{},
	}
	for _, obj := range objs {
		fill(reflect.ValueOf(obj).Elem(), 0)
		cp := obj.DeepCopyObject()
		if reflect.TypeOf(cp) != reflect.TypeOf(obj) {
			t.Errorf("%T.DeepCopyObject returned %T", obj, cp)
			continue
		}
		if cp == obj || !reflect.DeepEqual(cp, obj) {
			t.Errorf("%T.DeepCopyObject: want an equal, distinct object", obj)
		}
	}
	var nilMachine *v1alpha1.Machine
	if got := nilMachine.DeepCopyObject(); got != nil {
		t.Errorf("nil Machine DeepCopyObject = %#v, want untyped nil", got)
	}
}

func TestDeepCopyRunningMachine(t *testing.T) {
	// A readable spot check on a realistic object, in addition to the
	// exhaustive reflective check above.
	y, err := os.ReadFile(filepath.Join("testdata", "running-machine.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var orig v1alpha1.Machine
	if err := yaml.Unmarshal(y, &orig); err != nil {
		t.Fatal(err)
	}
	before, err := json.Marshal(&orig)
	if err != nil {
		t.Fatal(err)
	}

	cp := orig.DeepCopy()
	if !apiequality.Semantic.DeepEqual(&orig, cp) {
		t.Fatal("copy differs from original before mutation")
	}
	cp.Labels["pool"] = "changed"
	cp.Finalizers[0] = "changed"
	cp.OwnerReferences[0].Name = "changed"
	*cp.OwnerReferences[0].Controller = false
	cp.ManagedFields[0].FieldsV1.Raw[0] = ' '
	*cp.Spec.ProviderID = "changed"
	cp.Spec.ProviderSpec.Value.Raw[1] = 'X'
	cp.Status.ProviderStatus.Raw[1] = 'X'
	cp.Status.NodeRef.Name = "changed"
	*cp.Status.ErrorReason = v1alpha1.CreateMachineError
	*cp.Status.ErrorMessage = "changed"
	cp.Status.LastUpdated.Time = cp.Status.LastUpdated.Add(time.Hour)
	cp.Status.Addresses[0].Address = "changed"
	cp.Status.Conditions[0].Reason = "changed"
	*cp.Status.LastOperation.State = "changed"
	*cp.Status.Phase = "changed"
	cp.DeletionTimestamp.Time = cp.DeletionTimestamp.Add(time.Hour)

	after, err := json.Marshal(&orig)
	if err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, before, after)
}
