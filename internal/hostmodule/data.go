package hostmodule

import (
	"context"
	"errors"
	"fmt"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/provider"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Data is the host side of one call's data functions, given by the
// caller (see provider.Data for what each nil field means).
type Data = provider.Data

// ObjectReader reads one key of a Secret or ConfigMap for config_var.
type ObjectReader = provider.ObjectReader

// ErrKeyNotFound is wrapped by an ObjectReader whose object exists
// without the key asked for.
var ErrKeyNotFound = provider.ErrKeyNotFound

// Kube is the part of a clientset config_var reads through: core/v1.
// runtime.KubernetesClient has the same method set.
type Kube interface {
	CoreV1() corev1client.CoreV1Interface
}

// ClientObjects reads Secrets and ConfigMaps through a clientset.
type ClientObjects struct{ Client Kube }

// SecretKey implements ObjectReader.
func (o ClientObjects) SecretKey(ctx context.Context, ns, name, key string) (string, error) {
	s, err := o.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if v, ok := s.Data[key]; ok {
		return string(v), nil
	}
	return "", fmt.Errorf("secret '%s' in namespace '%s' has no key '%s': %w", name, ns, key, ErrKeyNotFound)
}

// ConfigMapKey implements ObjectReader.
func (o ClientObjects) ConfigMapKey(ctx context.Context, ns, name, key string) (string, error) {
	cm, err := o.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if v, ok := cm.Data[key]; ok {
		return v, nil
	}
	return "", fmt.Errorf("configmap '%s' in namespace '%s' has no key '%s': %w", name, ns, key, ErrKeyNotFound)
}

// objects returns the reader config_var uses in this call: the caller's,
// else one over the provider's clientset, else nil.
func (c *Call) objects() ObjectReader {
	if c.Data != nil && c.Data.Objects != nil {
		return c.Data.Objects
	}
	if c.Env.ConfigVar.Client != nil {
		return ClientObjects{c.Env.ConfigVar.Client}
	}
	return nil
}

// keyError maps an ObjectReader error onto config_var's errnos: a missing
// key or object (an API NotFound, whoever's client reads it) is NOT_FOUND;
// anything else is FAILED, worded as machine-controller's resolver words
// it.
func keyError(kind, ns, name string, err error) error {
	if errors.Is(err, ErrKeyNotFound) {
		return errorf(abi.ErrnoNotFound, "%v", err)
	}
	if apierrors.IsNotFound(err) {
		// The object does not exist: a person must create it or fix the
		// reference, which a provider reports as terminal; an API server
		// that failed to answer (below) is worth retrying.
		return errorf(abi.ErrnoNotFound, "%s '%s' not found in namespace '%s'", kind, name, ns)
	}
	return errorf(abi.ErrnoFailed, "error retrieving %s '%s' from namespace '%s': %v", kind, name, ns, err)
}

// createOrDelete reports whether the call may write its Machine and list
// PersistentVolumes (SPEC §6.3). The method decides, not the caller's
// Data: machine-controller's current contract passes ProviderData to Get
// too, and a provider must not change a Machine while it is only being
// looked at.
func (c *Call) createOrDelete() bool {
	return c.Method == abi.MethodCreate || c.Method == abi.MethodDelete
}
