package v1alpha1_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
)

// TestMachineClassRefShape pins the two places where these types once
// differed from machine-controller v1.66.2's sdk/apis/cluster/v1alpha1:
// MachineClassRef embeds *corev1.ObjectReference (a pointer, so a
// reference with only a provider encodes no object fields), and neither
// MachineSpec nor MachineDeploymentSpec has a nodeDrainTimeout field
// (upstream has none, so one written here would be dropped by every
// upstream reader).
func TestMachineClassRefShape(t *testing.T) {
	f, ok := reflect.TypeFor[v1alpha1.MachineClassRef]().FieldByName("ObjectReference")
	if !ok || !f.Anonymous || f.Type.Kind() != reflect.Pointer {
		t.Fatalf("MachineClassRef.ObjectReference: %+v, want an embedded pointer", f)
	}
	b, err := json.Marshal(v1alpha1.MachineClassRef{Provider: "aws"})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"provider":"aws"}` {
		t.Errorf("nil ObjectReference encodes %s", b)
	}
	var ref v1alpha1.MachineClassRef
	if err := json.Unmarshal([]byte(`{"kind":"MachineClass","name":"small","provider":"aws"}`), &ref); err != nil {
		t.Fatal(err)
	}
	if ref.ObjectReference == nil || ref.Name != "small" || ref.Kind != "MachineClass" || ref.Provider != "aws" {
		t.Errorf("decoded %+v", ref)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[v1alpha1.MachineSpec](), reflect.TypeFor[v1alpha1.MachineDeploymentSpec]()} {
		if _, ok := typ.FieldByName("NodeDrainTimeout"); ok {
			t.Errorf("%s has NodeDrainTimeout, which upstream does not", typ.Name())
		}
	}
}
