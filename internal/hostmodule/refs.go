package hostmodule

import (
	"encoding/json"
	"slices"
	"strings"
)

// ConfigRef is a reference to one key of a Secret or ConfigMap, as a
// provider spec carries it in a ConfigVarString or ConfigVarBool
// ({"secretKeyRef": {"namespace": …, "name": …, "key": …}}).
type ConfigRef struct {
	// Kind is "secretKeyRef" or "configMapKeyRef".
	Kind                 string
	Namespace, Name, Key string
}

// The reference kinds config_var resolves.
const (
	KindSecretKeyRef    = "secretKeyRef"
	KindConfigMapKeyRef = "configMapKeyRef"
)

func (r ConfigRef) String() string {
	return r.Kind + " " + r.Namespace + "/" + r.Name + " key " + r.Key
}

// ConfigRefs returns every complete Secret and ConfigMap reference anywhere
// in a provider spec (raw JSON), in a stable order. A spec that is not JSON
// has none.
func ConfigRefs(providerSpec []byte) []ConfigRef {
	if len(providerSpec) == 0 {
		return nil
	}
	var doc any
	if json.Unmarshal(providerSpec, &doc) != nil {
		return nil
	}
	var refs []ConfigRef
	collectRefs(doc, &refs)
	slices.SortFunc(refs, func(a, b ConfigRef) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(refs)
}

func collectRefs(doc any, refs *[]ConfigRef) {
	switch v := doc.(type) {
	case map[string]any:
		for _, kind := range []string{KindSecretKeyRef, KindConfigMapKeyRef} {
			ref, ok := v[kind].(map[string]any)
			if !ok {
				continue
			}
			ns, _ := ref["namespace"].(string)
			name, _ := ref["name"].(string)
			key, _ := ref["key"].(string)
			if ns != "" && name != "" && key != "" {
				*refs = append(*refs, ConfigRef{Kind: kind, Namespace: ns, Name: name, Key: key})
			}
		}
		for _, child := range v {
			collectRefs(child, refs)
		}
	case []any:
		for _, child := range v {
			collectRefs(child, refs)
		}
	}
}

// AddedConfigRefs returns the references in the provider spec after that
// are not in before: what a guest-produced spec (an AddDefaults result, a
// machine_update) would add to what config_var may read if it were stored.
// The host refuses such a spec, so every reference a stored Machine holds
// was written by someone other than the guest.
func AddedConfigRefs(before, after []byte) []ConfigRef {
	had := ConfigRefs(before)
	var added []ConfigRef
	for _, r := range ConfigRefs(after) {
		if !slices.Contains(had, r) {
			added = append(added, r)
		}
	}
	return added
}
