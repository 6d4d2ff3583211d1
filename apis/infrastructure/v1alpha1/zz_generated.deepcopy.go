// This file is written by hand in the shape deepcopy-gen would produce:
// this module does not run code generators. Every pointer, slice and map
// reachable from a type is copied; deepcopy_test.go fails for a field that
// is shared. Keep it in step with types.go.

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmMachine) DeepCopyInto(out *WasmMachine) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmMachine) DeepCopy() *WasmMachine {
	if in == nil {
		return nil
	}
	out := new(WasmMachine)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *WasmMachine) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmMachineSpec) DeepCopyInto(out *WasmMachineSpec) {
	*out = *in
	in.ProviderSpec.DeepCopyInto(&out.ProviderSpec)
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmMachineSpec) DeepCopy() *WasmMachineSpec {
	if in == nil {
		return nil
	}
	out := new(WasmMachineSpec)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmMachineStatus) DeepCopyInto(out *WasmMachineStatus) {
	*out = *in
	if in.Initialization != nil {
		out.Initialization = in.Initialization.DeepCopy()
	}
	if in.Addresses != nil {
		out.Addresses = make([]MachineAddress, len(in.Addresses))
		copy(out.Addresses, in.Addresses)
	}
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
	if in.FailureReason != nil {
		out.FailureReason = new(string)
		*out.FailureReason = *in.FailureReason
	}
	if in.FailureMessage != nil {
		out.FailureMessage = new(string)
		*out.FailureMessage = *in.FailureMessage
	}
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmMachineStatus) DeepCopy() *WasmMachineStatus {
	if in == nil {
		return nil
	}
	out := new(WasmMachineStatus)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmMachineInitialization) DeepCopyInto(out *WasmMachineInitialization) {
	*out = *in
	if in.Provisioned != nil {
		b := *in.Provisioned
		out.Provisioned = &b
	}
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmMachineInitialization) DeepCopy() *WasmMachineInitialization {
	if in == nil {
		return nil
	}
	out := new(WasmMachineInitialization)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *MachineAddress) DeepCopyInto(out *MachineAddress) { *out = *in }

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *MachineAddress) DeepCopy() *MachineAddress {
	if in == nil {
		return nil
	}
	out := new(MachineAddress)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmMachineList) DeepCopyInto(out *WasmMachineList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]WasmMachine, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmMachineList) DeepCopy() *WasmMachineList {
	if in == nil {
		return nil
	}
	out := new(WasmMachineList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *WasmMachineList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmMachineTemplate) DeepCopyInto(out *WasmMachineTemplate) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmMachineTemplate) DeepCopy() *WasmMachineTemplate {
	if in == nil {
		return nil
	}
	out := new(WasmMachineTemplate)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *WasmMachineTemplate) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmMachineTemplateSpec) DeepCopyInto(out *WasmMachineTemplateSpec) {
	*out = *in
	in.Template.DeepCopyInto(&out.Template)
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmMachineTemplateSpec) DeepCopy() *WasmMachineTemplateSpec {
	if in == nil {
		return nil
	}
	out := new(WasmMachineTemplateSpec)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmMachineTemplateResource) DeepCopyInto(out *WasmMachineTemplateResource) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmMachineTemplateResource) DeepCopy() *WasmMachineTemplateResource {
	if in == nil {
		return nil
	}
	out := new(WasmMachineTemplateResource)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *TemplateMeta) DeepCopyInto(out *TemplateMeta) {
	*out = *in
	if in.Labels != nil {
		out.Labels = make(map[string]string, len(in.Labels))
		for k, v := range in.Labels {
			out.Labels[k] = v
		}
	}
	if in.Annotations != nil {
		out.Annotations = make(map[string]string, len(in.Annotations))
		for k, v := range in.Annotations {
			out.Annotations[k] = v
		}
	}
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *TemplateMeta) DeepCopy() *TemplateMeta {
	if in == nil {
		return nil
	}
	out := new(TemplateMeta)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmMachineTemplateList) DeepCopyInto(out *WasmMachineTemplateList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]WasmMachineTemplate, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmMachineTemplateList) DeepCopy() *WasmMachineTemplateList {
	if in == nil {
		return nil
	}
	out := new(WasmMachineTemplateList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *WasmMachineTemplateList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmCluster) DeepCopyInto(out *WasmCluster) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = in.Spec
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmCluster) DeepCopy() *WasmCluster {
	if in == nil {
		return nil
	}
	out := new(WasmCluster)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *WasmCluster) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmClusterStatus) DeepCopyInto(out *WasmClusterStatus) {
	*out = *in
	if in.Initialization != nil {
		out.Initialization = in.Initialization.DeepCopy()
	}
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmClusterStatus) DeepCopy() *WasmClusterStatus {
	if in == nil {
		return nil
	}
	out := new(WasmClusterStatus)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmClusterInitialization) DeepCopyInto(out *WasmClusterInitialization) {
	*out = *in
	if in.Provisioned != nil {
		b := *in.Provisioned
		out.Provisioned = &b
	}
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmClusterInitialization) DeepCopy() *WasmClusterInitialization {
	if in == nil {
		return nil
	}
	out := new(WasmClusterInitialization)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmClusterList) DeepCopyInto(out *WasmClusterList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]WasmCluster, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmClusterList) DeepCopy() *WasmClusterList {
	if in == nil {
		return nil
	}
	out := new(WasmClusterList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *WasmClusterList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}
