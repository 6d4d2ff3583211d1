package hostmodule

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/guesttext"

	"k8s.io/apimachinery/pkg/util/validation"
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
	if !c.createOrDelete() || c.Data == nil || c.Data.Update == nil || c.Machine == nil {
		return nil, errorf(abi.ErrnoUnavailable, "machine_update is only available in Create and Delete with an updater")
	}
	// What config_var may read is fixed before the Machine changes: the
	// updater may change the caller's Machine in place.
	c.captureCaller()
	u, err := decodeMachineUpdate(req)
	if err != nil {
		return nil, err
	}
	if _, err := updated(c.Machine, u); err != nil {
		return nil, err
	}
	next, err := c.Data.Update(c.Machine, func(m *clusterv1alpha1.Machine) {
		// Checked above; should the fresh copy differ so that the change no
		// longer applies, m stays as it is: the safe answer, as the
		// callback cannot fail.
		if n, err := updated(m, u); err == nil {
			*m = *n
		}
	})
	if err != nil {
		return nil, errorf(abi.ErrnoFailed, "updating machine %s: %v", c.Machine.Name, err)
	}
	if next == nil {
		return nil, errorf(abi.ErrnoFailed, "machine updater returned no machine")
	}
	c.Machine = next
	c.machineChanged()
	c.logger().Debug("machine updated by provider", "resourceVersion", next.ResourceVersion)
	return json.Marshal(next)
}

// What a provider may change of its Machine (abi/SPEC.md §6.3): its own
// finalizers, labels and annotations (but the host's), and the spec (but
// no Secret or ConfigMap reference it did not already hold). Everything
// else — identity, ownerReferences, deletionTimestamp, status, other
// controllers' finalizers — is the cluster's, not the provider's.
const (
	// HostAnnotationPrefix marks annotations only the host writes.
	HostAnnotationPrefix = "wasmprov.io/"
	// FinalizersAnnotation lists, comma-separated, the finalizers the
	// provider added through machine_update: the only ones it may remove.
	FinalizersAnnotation = HostAnnotationPrefix + "provider-finalizers"
)

// updated returns a copy of m with u applied, or the errno error that
// refuses u.
func updated(m *clusterv1alpha1.Machine, u *abi.MachineUpdate) (*clusterv1alpha1.Machine, error) {
	next := m.DeepCopy()
	owned := ownedFinalizers(m)
	for _, f := range u.AddFinalizers {
		if f == "" {
			return nil, errorf(abi.ErrnoInvalid, "an empty finalizer name")
		}
		if hostFinalizer(f) && !slices.Contains(next.Finalizers, f) {
			// Added by the provider, it would count as the provider's
			// own, which it may remove: the controller's guarantee that
			// the instance is deleted before the Machine would be gone.
			return nil, errorf(abi.ErrnoDenied, "finalizer %q is the controller's", quoted(f))
		}
		if !slices.Contains(next.Finalizers, f) {
			next.Finalizers = append(next.Finalizers, f)
			if !slices.Contains(owned, f) {
				owned = append(owned, f)
			}
		}
	}
	for _, f := range u.RemoveFinalizers {
		if !slices.Contains(next.Finalizers, f) {
			continue
		}
		if !slices.Contains(owned, f) {
			return nil, errorf(abi.ErrnoDenied, "finalizer %q was not added by this provider; it may remove only its own", f)
		}
		next.Finalizers = slices.DeleteFunc(next.Finalizers, func(x string) bool { return x == f })
		owned = slices.DeleteFunc(owned, func(x string) bool { return x == f })
	}
	for kind, ops := range map[string]map[string]*string{"annotation": u.Annotations, "label": u.Labels} {
		for k := range ops {
			if strings.HasPrefix(k, HostAnnotationPrefix) {
				return nil, errorf(abi.ErrnoDenied, "%s %q is the host's (prefix %s)", kind, quoted(k), HostAnnotationPrefix)
			}
		}
	}
	next.Annotations = applyMap(next.Annotations, u.Annotations)
	next.Labels = applyMap(next.Labels, u.Labels)
	if u.ProviderID != nil {
		id := *u.ProviderID
		next.Spec.ProviderID = &id
	}
	if len(u.MergePatch) > 0 {
		if err := mergePatchMachine(next, u.MergePatch); err != nil {
			return nil, errorf(abi.ErrnoInvalid, "%v", err)
		}
	}
	if err := hostKeysKept("annotation", m.Annotations, next.Annotations); err != nil {
		return nil, err
	}
	if err := hostKeysKept("label", m.Labels, next.Labels); err != nil {
		return nil, err
	}
	if err := checkMetadata(m, next); err != nil {
		return nil, err
	}
	if added := AddedConfigRefs(rawProviderSpec(&m.Spec), rawProviderSpec(&next.Spec)); len(added) > 0 {
		return nil, errorf(abi.ErrnoDenied, "the update adds %s to the provider spec: a provider may not choose which Secrets or ConfigMaps it reads", added[0])
	}
	setOwnedFinalizers(next, owned) // after the check above: only the host writes it
	if err := checkMachineSize(m, next); err != nil {
		return nil, err
	}
	return next, nil
}

// MaxMachineBytes bounds the Machine a provider's update may leave, as
// JSON: labels, annotations and the spec are the provider's to change,
// but a Machine of megabytes fails its write (etcd's limit is ~1.5 MiB)
// or, below that, bloats every watch and list of Machines.
const MaxMachineBytes = 1 << 20

// checkMachineSize refuses an update that grows the Machine past
// MaxMachineBytes; one that shrinks a Machine already larger is allowed.
func checkMachineSize(m, next *clusterv1alpha1.Machine) error {
	after, err := json.Marshal(next)
	if err != nil {
		return errorf(abi.ErrnoInvalid, "the updated machine does not encode: %v", err)
	}
	if len(after) <= MaxMachineBytes {
		return nil
	}
	before, _ := json.Marshal(m)
	if len(after) > len(before) {
		return errorf(abi.ErrnoInvalid, "the update makes the machine %d bytes of JSON: a provider may leave at most %d", len(after), MaxMachineBytes)
	}
	return nil
}

// hostKeysKept refuses a change of before into after that adds, changes
// or removes a key with the host's prefix.
func hostKeysKept(kind string, before, after map[string]string) error {
	for k, v := range before {
		if w, ok := after[k]; strings.HasPrefix(k, HostAnnotationPrefix) && (!ok || w != v) {
			return errorf(abi.ErrnoDenied, "%s %q is the host's (prefix %s)", kind, quoted(k), HostAnnotationPrefix)
		}
	}
	for k := range after {
		if _, had := before[k]; strings.HasPrefix(k, HostAnnotationPrefix) && !had {
			return errorf(abi.ErrnoDenied, "%s %q is the host's (prefix %s)", kind, quoted(k), HostAnnotationPrefix)
		}
	}
	return nil
}

// hostFinalizer reports whether f is a finalizer only the controller adds
// and removes: machine-controller's, or one with the host's prefix.
func hostFinalizer(f string) bool {
	return f == ControllerFinalizer || strings.HasPrefix(f, HostAnnotationPrefix)
}

// ControllerFinalizer is machine-controller's finalizer, which holds a
// Machine until its instance is deleted.
const ControllerFinalizer = "machine-delete-finalizer"

// checkMetadata refuses labels and annotations next changes from m that
// the API server would refuse (so the guest gets INVALID naming the rule
// instead of an updater error) or whose text is not printable: `kubectl
// describe` prints them as they are.
func checkMetadata(m, next *clusterv1alpha1.Machine) error {
	for k, v := range next.Labels {
		if w, ok := m.Labels[k]; ok && w == v {
			continue
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return errorf(abi.ErrnoInvalid, "label key %q: %s", quoted(k), errs[0])
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return errorf(abi.ErrnoInvalid, "label %q: %s", quoted(k), errs[0])
		}
	}
	size := 0
	for k, v := range next.Annotations {
		size += len(k) + len(v)
		if w, ok := m.Annotations[k]; ok && w == v {
			continue
		}
		if errs := validation.IsQualifiedName(strings.ToLower(k)); len(errs) > 0 {
			return errorf(abi.ErrnoInvalid, "annotation key %q: %s", quoted(k), errs[0])
		}
		if guesttext.Printable(v) != v {
			return errorf(abi.ErrnoInvalid, "annotation %q: the value is not UTF-8 or holds control or format characters", quoted(k))
		}
	}
	if size > MaxAnnotationBytes {
		return errorf(abi.ErrnoInvalid, "annotations of %d bytes: the API server allows %d in all", size, MaxAnnotationBytes)
	}
	return nil
}

// MaxAnnotationBytes is the API server's limit on a object's annotations,
// keys and values together.
const MaxAnnotationBytes = 256 << 10

// quoted is a guest's key as an error message quotes it.
func quoted(k string) string { return guesttext.ClipPrintableLine(k, 64) }

func rawProviderSpec(s *clusterv1alpha1.MachineSpec) []byte {
	if s.ProviderSpec.Value == nil {
		return nil
	}
	return s.ProviderSpec.Value.Raw
}

func ownedFinalizers(m *clusterv1alpha1.Machine) []string {
	v := m.Annotations[FinalizersAnnotation]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

func setOwnedFinalizers(m *clusterv1alpha1.Machine, owned []string) {
	if len(owned) == 0 {
		delete(m.Annotations, FinalizersAnnotation)
		return
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[FinalizersAnnotation] = strings.Join(owned, ",")
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

// mergePatchMachine applies an RFC 7386 merge patch to m. It may reach
// metadata.labels, metadata.annotations and spec only: a provider must not
// be able to turn an update of its own Machine into a rename, a write to
// another object, a status forgery or the removal of other controllers'
// finalizers.
func mergePatchMachine(m *clusterv1alpha1.Machine, patch json.RawMessage) error {
	var p any
	if err := json.Unmarshal(patch, &p); err != nil {
		return fmt.Errorf("mergePatch is not valid JSON: %w", err)
	}
	top, ok := p.(map[string]any)
	if !ok {
		return fmt.Errorf("mergePatch must be a JSON object")
	}
	for k, v := range top {
		switch k {
		case "spec":
		case "metadata":
			meta, ok := v.(map[string]any)
			if !ok {
				return fmt.Errorf("mergePatch may not replace metadata")
			}
			for mk := range meta {
				if mk != "labels" && mk != "annotations" {
					return fmt.Errorf("mergePatch may not change metadata.%s (only labels and annotations)", mk)
				}
			}
		default:
			return fmt.Errorf("mergePatch may not change %s (only metadata.labels, metadata.annotations and spec)", k)
		}
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

// machineUpdateFields are the fields of abi.MachineUpdate, exactly as
// the SPEC spells them.
var machineUpdateFields = []string{"addFinalizers", "removeFinalizers", "annotations", "labels", "providerID", "mergePatch"}

// decodeMachineUpdate decodes a machine_update request, refusing a field
// it does not know, compared exactly (abi/SPEC.md §6.3): a misspelt
// "anotations" or "providerId" silently ignored would be a write the
// provider believes was made.
func decodeMachineUpdate(req []byte) (*abi.MachineUpdate, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(req, &fields); err != nil {
		return nil, errorf(abi.ErrnoInvalid, "machine_update request is not a JSON object: %v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(machineUpdateFields, k) {
			if len(k) > 64 {
				k = k[:64] + "…"
			}
			return nil, errorf(abi.ErrnoInvalid, "machine_update request has unknown field %q; the fields are %s (SPEC §6.3)",
				k, strings.Join(machineUpdateFields, ", "))
		}
	}
	var u abi.MachineUpdate
	if err := json.Unmarshal(req, &u); err != nil {
		return nil, errorf(abi.ErrnoInvalid, "machine_update request is not valid: %v", err)
	}
	return &u, nil
}
