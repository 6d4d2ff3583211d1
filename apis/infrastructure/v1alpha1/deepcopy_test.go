package v1alpha1_test

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmprov/wasmprov/apis/infrastructure/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/testing/deepcopytest"
)

// zz_generated.deepcopy.go is written by hand: deepcopytest fills every
// reachable field, mutates the copy at every leaf and fails if the
// original changed with it (a pointer, slice or map the copy shares).
func TestDeepCopyIndependence(t *testing.T) {
	checks := map[string]func(*testing.T) int{
		"WasmMachine":                 deepcopytest.Check[v1alpha1.WasmMachine],
		"WasmMachineList":             deepcopytest.Check[v1alpha1.WasmMachineList],
		"WasmMachineSpec":             deepcopytest.Check[v1alpha1.WasmMachineSpec],
		"WasmMachineStatus":           deepcopytest.Check[v1alpha1.WasmMachineStatus],
		"WasmMachineInitialization":   deepcopytest.Check[v1alpha1.WasmMachineInitialization],
		"MachineAddress":              deepcopytest.Check[v1alpha1.MachineAddress],
		"WasmMachineTemplate":         deepcopytest.Check[v1alpha1.WasmMachineTemplate],
		"WasmMachineTemplateList":     deepcopytest.Check[v1alpha1.WasmMachineTemplateList],
		"WasmMachineTemplateSpec":     deepcopytest.Check[v1alpha1.WasmMachineTemplateSpec],
		"WasmMachineTemplateResource": deepcopytest.Check[v1alpha1.WasmMachineTemplateResource],
		"TemplateMeta":                deepcopytest.Check[v1alpha1.TemplateMeta],
		"WasmCluster":                 deepcopytest.Check[v1alpha1.WasmCluster],
		"WasmClusterList":             deepcopytest.Check[v1alpha1.WasmClusterList],
		"WasmClusterStatus":           deepcopytest.Check[v1alpha1.WasmClusterStatus],
		"WasmClusterInitialization":   deepcopytest.Check[v1alpha1.WasmClusterInitialization],
	}
	for name, check := range checks {
		t.Run(name, func(t *testing.T) { check(t) })
	}
}

// Every object and list type is a runtime.Object whose copy is equal and
// distinct, and a nil receiver copies to an untyped nil.
func TestDeepCopyObject(t *testing.T) {
	for _, obj := range []runtime.Object{&v1alpha1.WasmMachine{}, &v1alpha1.WasmMachineList{},
		&v1alpha1.WasmMachineTemplate{}, &v1alpha1.WasmMachineTemplateList{},
		&v1alpha1.WasmCluster{}, &v1alpha1.WasmClusterList{}} {
		deepcopytest.Fill(reflect.ValueOf(obj).Elem())
		cp := obj.DeepCopyObject()
		if reflect.TypeOf(cp) != reflect.TypeOf(obj) || cp == obj || !reflect.DeepEqual(cp, obj) {
			t.Errorf("%T.DeepCopyObject: want an equal, distinct %T, got %T", obj, obj, cp)
		}
		nilRecv := reflect.Zero(reflect.TypeOf(obj)).Interface().(runtime.Object)
		if got := nilRecv.DeepCopyObject(); got != nil {
			t.Errorf("nil %T DeepCopyObject = %#v, want untyped nil", obj, got)
		}
	}
}
