package infrastructure

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	infrav1 "github.com/wasmprov/wasmprov/apis/infrastructure/v1alpha1"
	"github.com/wasmprov/wasmprov/provider"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// machineView is the machine-controller Machine a provider is called
// with for wm: the WasmMachine's metadata (its name, namespace and UID —
// what providers name and tag instances by), its providerSpec as
// spec.providerSpec.value, its providerID, and the Cluster API Machine's
// Kubernetes version as the kubelet's.
func machineView(wm *infrav1.WasmMachine, kubelet string) *clusterv1alpha1.Machine {
	m := &clusterv1alpha1.Machine{ObjectMeta: *wm.ObjectMeta.DeepCopy()}
	m.APIVersion = clusterv1alpha1.SchemeGroupVersion.String()
	m.Kind = "Machine"
	m.Spec.ProviderSpec.Value = wm.Spec.ProviderSpec.DeepCopy()
	if wm.Spec.ProviderID != "" {
		pid := wm.Spec.ProviderID
		m.Spec.ProviderID = &pid
	}
	m.Spec.Versions.Kubelet = kubelet
	return m
}

// fromView copies back into wm what a provider may change of its view
// through the MachineUpdater: labels, annotations, the providerSpec and
// the providerID. Status changes have no place in a WasmMachine and are
// dropped.
func fromView(wm *infrav1.WasmMachine, m *clusterv1alpha1.Machine) {
	wm.Labels = m.Labels
	wm.Annotations = m.Annotations
	if v := m.Spec.ProviderSpec.Value; v != nil {
		wm.Spec.ProviderSpec = *v.DeepCopy()
	}
	if m.Spec.ProviderID != nil {
		wm.Spec.ProviderID = *m.Spec.ProviderID
	}
}

// updater is the provider.MachineUpdater of Create's and Cleanup's Data:
// modify is applied to the view of the WasmMachine as stored (read again
// on a conflict, so modify must be idempotent) and what it changed is
// written to the WasmMachine.
func (r *MachineReconciler) updater(ctx context.Context, kubelet string) provider.MachineUpdater {
	return func(m *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
		var out *clusterv1alpha1.Machine
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			wm := &infrav1.WasmMachine{}
			if err := r.opts.APIReader.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, wm); err != nil {
				return err
			}
			if wm.UID != m.UID {
				return fmt.Errorf("WasmMachine %s/%s was replaced (UID changed)", m.Namespace, m.Name)
			}
			view := machineView(wm, kubelet)
			modify(view)
			next := wm.DeepCopy()
			fromView(next, view)
			if !equality.Semantic.DeepEqual(wm.ObjectMeta, next.ObjectMeta) || !equality.Semantic.DeepEqual(wm.Spec, next.Spec) {
				if err := r.opts.Client.Update(ctx, next); err != nil {
					return err
				}
			}
			out = machineView(next, kubelet)
			return nil
		})
		return out, err
	}
}

// sameJSON reports whether two providerSpecs are the same JSON value,
// whatever their formatting: AddDefaults answers re-encoded JSON, which
// must not count as a change by itself.
func sameJSON(a, b runtime.RawExtension) bool {
	var x, y any
	if json.Unmarshal(a.Raw, &x) != nil || json.Unmarshal(b.Raw, &y) != nil {
		return bytes.Equal(a.Raw, b.Raw)
	}
	return equality.Semantic.DeepEqual(x, y)
}
