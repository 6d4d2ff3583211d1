// This file is written by hand in the shape deepcopy-gen would produce:
// this module does not run code generators. Every pointer, slice and map
// reachable from a type is copied; deepcopy_test.go fails for a field that
// is shared. Keep it in step with types.go.

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmProvider) DeepCopyInto(out *WasmProvider) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmProvider) DeepCopy() *WasmProvider {
	if in == nil {
		return nil
	}
	out := new(WasmProvider)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *WasmProvider) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmProviderList) DeepCopyInto(out *WasmProviderList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]WasmProvider, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmProviderList) DeepCopy() *WasmProviderList {
	if in == nil {
		return nil
	}
	out := new(WasmProviderList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *WasmProviderList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmProviderSpec) DeepCopyInto(out *WasmProviderSpec) {
	*out = *in
	in.Source.DeepCopyInto(&out.Source)
	if in.Verify != nil {
		out.Verify = new(runtime.RawExtension)
		in.Verify.DeepCopyInto(out.Verify)
	}
	if in.Policy != nil {
		out.Policy = new(runtime.RawExtension)
		in.Policy.DeepCopyInto(out.Policy)
	}
	if in.Pool != nil {
		out.Pool = new(Pool)
		in.Pool.DeepCopyInto(out.Pool)
	}
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmProviderSpec) DeepCopy() *WasmProviderSpec {
	if in == nil {
		return nil
	}
	out := new(WasmProviderSpec)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *Source) DeepCopyInto(out *Source) {
	*out = *in
	if in.Image != nil {
		out.Image = new(ImageSource)
		in.Image.DeepCopyInto(out.Image)
	}
	if in.ConfigMap != nil {
		out.ConfigMap = new(ConfigMapSource)
		*out.ConfigMap = *in.ConfigMap
	}
	if in.URL != nil {
		out.URL = new(URLSource)
		*out.URL = *in.URL
	}
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *Source) DeepCopy() *Source {
	if in == nil {
		return nil
	}
	out := new(Source)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *ImageSource) DeepCopyInto(out *ImageSource) {
	*out = *in
	if in.PullSecret != nil {
		out.PullSecret = new(corev1.SecretReference)
		*out.PullSecret = *in.PullSecret
	}
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *ImageSource) DeepCopy() *ImageSource {
	if in == nil {
		return nil
	}
	out := new(ImageSource)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *WasmProviderStatus) DeepCopyInto(out *WasmProviderStatus) {
	*out = *in
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
	if in.Serving != nil {
		out.Serving = new(Revision)
		in.Serving.DeepCopyInto(out.Serving)
	}
	if in.LastRejected != nil {
		out.LastRejected = new(Rejection)
		in.LastRejected.DeepCopyInto(out.LastRejected)
	}
	if in.Revisions != nil {
		out.Revisions = make([]Revision, len(in.Revisions))
		for i := range in.Revisions {
			in.Revisions[i].DeepCopyInto(&out.Revisions[i])
		}
	}
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *WasmProviderStatus) DeepCopy() *WasmProviderStatus {
	if in == nil {
		return nil
	}
	out := new(WasmProviderStatus)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *Revision) DeepCopyInto(out *Revision) {
	*out = *in
	in.Since.DeepCopyInto(&out.Since)
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *Rejection) DeepCopyInto(out *Rejection) {
	*out = *in
	in.Time.DeepCopyInto(&out.Time)
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *Revision) DeepCopy() *Revision {
	if in == nil {
		return nil
	}
	out := new(Revision)
	in.DeepCopyInto(out)
	return out
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *Rejection) DeepCopy() *Rejection {
	if in == nil {
		return nil
	}
	out := new(Rejection)
	in.DeepCopyInto(out)
	return out
}

// The types below hold no pointer, slice or map: a plain assignment is a
// deep copy. They get the same methods as the others so that callers need
// not know that.

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *ConfigMapSource) DeepCopyInto(out *ConfigMapSource) { *out = *in }

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *ConfigMapSource) DeepCopy() *ConfigMapSource {
	if in == nil {
		return nil
	}
	out := new(ConfigMapSource)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *URLSource) DeepCopyInto(out *URLSource) { *out = *in }

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *URLSource) DeepCopy() *URLSource {
	if in == nil {
		return nil
	}
	out := new(URLSource)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *Pool) DeepCopyInto(out *Pool) {
	*out = *in
	if in.IdleTimeout != nil {
		out.IdleTimeout = new(metav1.Duration)
		*out.IdleTimeout = *in.IdleTimeout
	}
}

// DeepCopy returns a deep copy of the receiver (nil for nil).
func (in *Pool) DeepCopy() *Pool {
	if in == nil {
		return nil
	}
	out := new(Pool)
	in.DeepCopyInto(out)
	return out
}
