package main

import (
	"context"
	"fmt"
	"os"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/provider"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// readMachine reads a Machine manifest (YAML or JSON). Unknown fields are an
// error: a typo in a manifest should not silently vanish.
func readMachine(path string) (*clusterv1alpha1.Machine, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := new(clusterv1alpha1.Machine)
	if err := yaml.UnmarshalStrict(b, m); err != nil {
		return nil, fmt.Errorf("%s is not a valid Machine manifest: %w", path, err)
	}
	if m.Kind != "" && m.Kind != "Machine" {
		return nil, fmt.Errorf("%s: kind is %q, want Machine", path, m.Kind)
	}
	return m, nil
}

// localData is the call data of Create and Delete for running a provider
// outside a cluster: updates apply to an in-memory copy of the Machine, and the
// PersistentVolumes come from a file (or none).
type localData struct {
	machine *clusterv1alpha1.Machine
	updates int
}

func (l *localData) data(pvs []corev1.PersistentVolume) *provider.Data {
	return &provider.Data{
		Update: func(m *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
			next := l.machine.DeepCopy()
			modify(next)
			l.machine = next
			l.updates++
			return next.DeepCopy(), nil
		},
		ListPersistentVolumes: func(_ context.Context, sel labels.Selector) ([]corev1.PersistentVolume, error) {
			var out []corev1.PersistentVolume
			for _, pv := range pvs {
				if sel.Matches(labels.Set(pv.Labels)) {
					out = append(out, pv)
				}
			}
			return out, nil
		},
	}
}

func readPVs(path string) ([]corev1.PersistentVolume, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var list corev1.PersistentVolumeList
	if err := yaml.UnmarshalStrict(b, &list); err != nil {
		return nil, fmt.Errorf("%s is not a valid PersistentVolumeList: %w", path, err)
	}
	return list.Items, nil
}
