package conformance

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// uid returns a deterministic UID for a check's n-th Machine, so that runs
// replay the same requests.
func uid(seed string) types.UID {
	sum := sha256.Sum256([]byte(seed))
	h := hex.EncodeToString(sum[:16])
	return types.UID(h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32])
}

// machine returns a Machine named after the check, with the defaulted
// provider spec (as machine-controller's webhook would have stored it),
// and stores it: calls receive its stored version (t.current), which is
// what the provider's machine_update calls made of it.
func (t *T) machine(n int) *clusterv1alpha1.Machine {
	m := t.rawMachine(n)
	m.Spec.ProviderSpec.Value.Raw = append([]byte(nil), t.env.defaulted...)
	t.store.put(m)
	return m
}

// current returns the stored version of m: what the controller would pass
// to the provider's next call.
func (t *T) current(m *clusterv1alpha1.Machine) *clusterv1alpha1.Machine {
	return t.store.current(m)
}

// rawMachine is machine with the configured spec, before AddDefaults.
func (t *T) rawMachine(n int) *clusterv1alpha1.Machine {
	slug := strings.NewReplacer(".", "-", "_", "-").Replace(t.id)
	name := fmt.Sprintf("wpc-%s-%d", slug, n)
	return newMachine(name, uid(t.id+"/"+name), t.env.spec)
}

// machineNamespace is the namespace of every Machine of a run.
const machineNamespace = "kube-system"

func newMachine(name string, u types.UID, spec json.RawMessage) *clusterv1alpha1.Machine {
	m := &clusterv1alpha1.Machine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "cluster.k8s.io/v1alpha1", Kind: "Machine"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: machineNamespace, UID: u},
	}
	m.Spec.Name = name
	m.Spec.Versions.Kubelet = "1.31.0"
	if spec != nil {
		m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: append([]byte(nil), spec...)}
	}
	return m
}

// describe names the outcome of a call for failure messages.
func describe(err error) string {
	if err == nil {
		return "success"
	}
	class := runtime.ErrorClass(err)
	if class == "" {
		return fmt.Sprintf("error: %v", err)
	}
	return fmt.Sprintf("%s error: %v", class, err)
}

func describeInstance(i instance.Instance) string {
	if i == nil {
		return "no instance"
	}
	return fmt.Sprintf("instance{name %q, id %q, providerID %q, status %q}", i.Name(), i.ID(), i.ProviderID(), i.Status())
}

// sandboxFailure reports errors that are never acceptable: the guest
// trapped or panicked, returned something the ABI does not allow, or ran
// past its deadline.
func sandboxFailure(err error) bool {
	switch runtime.ErrorClass(err) {
	case runtime.ClassTrap, runtime.ClassBadResult, runtime.ClassTimeout:
		return true
	}
	return false
}

func isNotFound(err error) bool { return cloudprovidererrors.IsNotFound(err) }
