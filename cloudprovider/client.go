package cloudprovider

import (
	"context"
	"fmt"

	"github.com/wasmprov/wasmprov/provider"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// clientObjects serves config_var and pv_list from a controller-runtime
// client: machine-controller's replacement of the seed's PV lister. With
// the manager's client, reads come from its cache.
type clientObjects struct{ c ctrlruntimeclient.Client }

var _ provider.ObjectReader = clientObjects{}

func (o clientObjects) SecretKey(ctx context.Context, namespace, name, key string) (string, error) {
	var s corev1.Secret
	if err := o.c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &s); err != nil {
		return "", err
	}
	if v, ok := s.Data[key]; ok {
		return string(v), nil
	}
	return "", fmt.Errorf("secret '%s' in namespace '%s' has no key '%s': %w", name, namespace, key, provider.ErrKeyNotFound)
}

func (o clientObjects) ConfigMapKey(ctx context.Context, namespace, name, key string) (string, error) {
	var cm corev1.ConfigMap
	if err := o.c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &cm); err != nil {
		return "", err
	}
	if v, ok := cm.Data[key]; ok {
		return v, nil
	}
	return "", fmt.Errorf("configmap '%s' in namespace '%s' has no key '%s': %w", name, namespace, key, provider.ErrKeyNotFound)
}

func (o clientObjects) listPersistentVolumes(ctx context.Context, sel labels.Selector) ([]corev1.PersistentVolume, error) {
	var list corev1.PersistentVolumeList
	if err := o.c.List(ctx, &list, ctrlruntimeclient.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	return list.Items, nil
}
