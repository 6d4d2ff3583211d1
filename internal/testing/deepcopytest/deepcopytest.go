// Package deepcopytest checks hand-written DeepCopy methods: Check fills
// every reachable field of a value with a deterministic non-zero value,
// copies it and mutates every leaf of the copy; a pointer, slice backing
// array or map the copy shares with the original shows as a change to the
// original. The API packages write their deepcopy by hand (this module runs
// no generators), so these tests are what notices a forgotten field.
package deepcopytest

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// The DeepCopy tests work on objects in which every reachable field is set:
// Fill walks a type with reflection and sets every settable field to a
// deterministic non-zero value, allocating every pointer, giving every
// slice two elements and every map two entries. A second fill of a fresh
// object therefore yields an independent, identical reference value.
//
// Mutate then changes every leaf reachable from the copy, through every
// pointer, slice and map. If DeepCopy shares any pointer, slice backing
// array or map with the original, the original changes too and no longer
// equals the reference value.

var timeType = reflect.TypeFor[time.Time]()

// Fill sets every settable field reachable from v to a deterministic
// non-zero value: two fills of fresh values are equal and independent.
func Fill(v reflect.Value) { fill(v, 0) }

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

// Mutate changes every leaf reachable from v and returns how many it
// changed.
func Mutate(v reflect.Value) int {
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(v.Interface().(time.Time).Add(time.Hour)))
		return 1
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		return Mutate(v.Elem())
	case reflect.Struct:
		n := 0
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() {
				n += Mutate(f)
			}
		}
		return n
	case reflect.Slice:
		n := 0
		for i := 0; i < v.Len(); i++ {
			n += Mutate(v.Index(i))
		}
		return n
	case reflect.Map:
		// Map elements are not addressable: replace each value by a mutated
		// copy, and add a key, both visible through a shared map.
		n := 0
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			n += Mutate(e)
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

// FirstDifference names the first field path at which a and b differ.
func FirstDifference(a, b reflect.Value, path string) string {
	if reflect.DeepEqual(a.Interface(), b.Interface()) {
		return ""
	}
	switch a.Kind() {
	case reflect.Pointer:
		if !a.IsNil() && !b.IsNil() {
			return FirstDifference(a.Elem(), b.Elem(), path)
		}
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !a.Type().Field(i).IsExported() {
				continue
			}
			if d := FirstDifference(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
	case reflect.Slice:
		if a.Len() == b.Len() {
			for i := 0; i < a.Len(); i++ {
				if d := FirstDifference(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
					return d
				}
			}
		}
	}
	return path
}

// DeepCopyable is a pointer to T with deepcopy-gen's methods.
type DeepCopyable[T any] interface {
	*T
	DeepCopy() *T
	DeepCopyInto(*T)
}

// Check runs the fill/copy/mutate check for one type and returns
// the number of leaves mutated, so callers can see it reached deep.
func Check[T any, PT DeepCopyable[T]](t *testing.T) int {
	t.Helper()
	orig := PT(new(T))
	Fill(reflect.ValueOf(orig).Elem())
	reference := PT(new(T))
	Fill(reflect.ValueOf(reference).Elem())

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

	n := Mutate(reflect.ValueOf(cp).Elem())
	n2 := Mutate(reflect.ValueOf(into).Elem())
	if n == 0 || n != n2 {
		t.Fatalf("%T: mutate changed %d and %d leaves", orig, n, n2)
	}
	if reflect.DeepEqual(cp, reference) {
		t.Fatalf("%T: mutating the copy had no effect; the test is not testing anything", orig)
	}
	if !reflect.DeepEqual(orig, reference) {
		t.Errorf("%T: mutating the deep copy changed the original at %s: a pointer, slice or map is shared",
			orig, FirstDifference(reflect.ValueOf(orig).Elem(), reflect.ValueOf(reference).Elem(), "obj"))
	}
	if (PT)(nil).DeepCopy() != nil {
		t.Errorf("%T: DeepCopy of nil is not nil", orig)
	}
	return n
}
