package v1alpha1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is the API's group and version.
var SchemeGroupVersion = schema.GroupVersion{Group: "cluster.k8s.io", Version: "v1alpha1"}

// AddToScheme registers Machine and MachineList, so a controller-runtime
// client (the fake one in tests) can serve them.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &Machine{}, &MachineList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// DeepCopy copies m through JSON: this stand-in has no generated deep
// copies, and its types are JSON all the way down.
func (m *Machine) DeepCopy() *Machine {
	if m == nil {
		return nil
	}
	out := new(Machine)
	jsonCopy(m, out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (m *Machine) DeepCopyObject() runtime.Object { return m.DeepCopy() }

// DeepCopy copies l through JSON.
func (l *MachineList) DeepCopy() *MachineList {
	if l == nil {
		return nil
	}
	out := new(MachineList)
	jsonCopy(l, out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *MachineList) DeepCopyObject() runtime.Object { return l.DeepCopy() }

func jsonCopy(in, out any) {
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
}
