package hostfuncs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
)

// machineUpdate applies the guest's abi.MachineUpdate through
// data.Updater — machine-controller's MachineUpdater, which persists the
// change and retries on conflicts — and returns the updated Machine.
//
// The guest describes the change as data rather than a function, so the
// host can re-apply it to the fresh copy the updater fetches on a conflict.
// The change is validated against the current Machine first: the updater's
// callback cannot fail, so a bad patch must be caught before it runs.
func machineUpdate(_ context.Context, c *Call, req []byte) ([]byte, error) {
	if c.Data == nil || c.Data.Updater == nil || c.Machine == nil {
		return nil, errorf(abi.ErrnoUnavailable, "machine_update is only available in Create and Delete with an updater")
	}
	var u abi.MachineUpdate
	if err := json.Unmarshal(req, &u); err != nil {
		return nil, errorf(abi.ErrnoInvalid, "machine_update request is not valid JSON: %v", err)
	}
	if err := applyUpdate(c.Machine.DeepCopy(), &u); err != nil {
		return nil, errorf(abi.ErrnoInvalid, "%v", err)
	}
	updated, err := c.Data.Updater(c.Machine, func(m *clusterv1alpha1.Machine) {
		// Validated above; a failure here would mean the fresh copy differs
		// in a way that breaks the patch, and leaving m unchanged is the safe
		// answer.
		_ = applyUpdate(m, &u)
	})
	if err != nil {
		return nil, errorf(abi.ErrnoFailed, "updating machine %s: %v", c.Machine.Name, err)
	}
	if updated == nil {
		return nil, errorf(abi.ErrnoFailed, "machine updater returned no machine")
	}
	c.Machine = updated
	c.machineChanged()
	c.logger().Debug("machine updated by provider", "resourceVersion", updated.ResourceVersion)
	return json.Marshal(updated)
}

func applyUpdate(m *clusterv1alpha1.Machine, u *abi.MachineUpdate) error {
	for _, f := range u.AddFinalizers {
		if !slices.Contains(m.Finalizers, f) {
			m.Finalizers = append(m.Finalizers, f)
		}
	}
	if len(u.RemoveFinalizers) > 0 {
		m.Finalizers = slices.DeleteFunc(m.Finalizers, func(f string) bool {
			return slices.Contains(u.RemoveFinalizers, f)
		})
	}
	m.Annotations = applyMap(m.Annotations, u.Annotations)
	m.Labels = applyMap(m.Labels, u.Labels)
	if u.ProviderID != nil {
		id := *u.ProviderID
		m.Spec.ProviderID = &id
	}
	if len(u.MergePatch) > 0 {
		return mergePatchMachine(m, u.MergePatch)
	}
	return nil
}

func applyMap(dst map[string]string, ops map[string]*string) map[string]string {
	for k, v := range ops {
		if v == nil {
			delete(dst, k)
			continue
		}
		if dst == nil {
			dst = map[string]string{}
		}
		dst[k] = *v
	}
	return dst
}

// mergePatchMachine applies an RFC 7386 merge patch to m. Identity fields
// may not change: a provider must not be able to turn an update of its own
// Machine into a write to another object.
func mergePatchMachine(m *clusterv1alpha1.Machine, patch json.RawMessage) error {
	var p any
	if err := json.Unmarshal(patch, &p); err != nil {
		return fmt.Errorf("mergePatch is not valid JSON: %w", err)
	}
	if _, ok := p.(map[string]any); !ok {
		return fmt.Errorf("mergePatch must be a JSON object")
	}
	cur, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var doc any
	if err := json.Unmarshal(cur, &doc); err != nil {
		return err
	}
	out, err := json.Marshal(mergePatch(doc, p))
	if err != nil {
		return err
	}
	var next clusterv1alpha1.Machine
	if err := json.Unmarshal(out, &next); err != nil {
		return fmt.Errorf("mergePatch produces an invalid Machine: %w", err)
	}
	if next.Name != m.Name || next.Namespace != m.Namespace || next.UID != m.UID {
		return fmt.Errorf("mergePatch may not change metadata.name, namespace or uid")
	}
	if next.Kind != m.Kind || next.APIVersion != m.APIVersion {
		return fmt.Errorf("mergePatch may not change kind or apiVersion")
	}
	*m = next
	return nil
}

// mergePatch implements RFC 7386.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}
