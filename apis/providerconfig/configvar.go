package providerconfig

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// The types in this file mirror the config variable types of upstream
// sdk/providerconfig/types.go (ConfigVarString, ConfigVarBool and their
// key selectors). Resolving a selector against the API server, which
// upstream does in sdk/providerconfig/configvar, is not part of this
// package.

// ObjectReference has the fields and the JSON shape of
// k8s.io/api/core/v1.ObjectReference, which upstream embeds in its key
// selectors. It is duplicated here so that this package does not depend on
// k8s.io/api; field order and tags match, so the encoded bytes match too.
type ObjectReference struct {
	Kind            string    `json:"kind,omitempty"`
	Namespace       string    `json:"namespace,omitempty"`
	Name            string    `json:"name,omitempty"`
	UID             types.UID `json:"uid,omitempty"`
	APIVersion      string    `json:"apiVersion,omitempty"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	FieldPath       string    `json:"fieldPath,omitempty"`
}

// GlobalObjectKeySelector selects a key of an object in any namespace.
// It exists because corev1.SecretKeySelector cannot point across
// namespaces.
type GlobalObjectKeySelector struct {
	ObjectReference `json:",inline"`
	Key             string `json:"key,omitempty"`
}

// GlobalSecretKeySelector selects a key of a Secret in any namespace.
type GlobalSecretKeySelector GlobalObjectKeySelector

// GlobalConfigMapKeySelector selects a key of a ConfigMap in any namespace.
type GlobalConfigMapKeySelector GlobalObjectKeySelector

// isEmptyRef reports whether a selector counts as unset. Upstream looks at
// namespace, name and key only; a selector with just, say, kind set is
// treated as unset, and so is it here.
func isEmptyRef(namespace, name, key string) bool {
	return namespace == "" && name == "" && key == ""
}

// ConfigVarString is a string that is given inline or read from a Secret or
// ConfigMap key.
//
// On the wire it is either a bare JSON string (the inline value) or an
// object {"secretKeyRef": {...}, "configMapKeyRef": {...}, "value": "..."}.
type ConfigVarString struct {
	Value           string                     `json:"value,omitempty"`
	SecretKeyRef    GlobalSecretKeySelector    `json:"secretKeyRef,omitempty"`
	ConfigMapKeyRef GlobalConfigMapKeySelector `json:"configMapKeyRef,omitempty"`
}

// configVarStringFields has ConfigVarString's fields but not its methods,
// so that the object form can be decoded without recursing.
type configVarStringFields ConfigVarString

// MarshalJSON emits the bare string Value when neither selector is set
// (also for an empty Value: ""), and otherwise an object with the set
// selectors followed by a non-empty value, in upstream's key order
// (secretKeyRef, configMapKeyRef, value).
//
// Upstream formats the strings with %s and does not escape them, so it
// produces invalid or different JSON for values containing '"', '\' or
// control characters; here they are escaped properly. For every other value
// the output is the same.
func (v ConfigVarString) MarshalJSON() ([]byte, error) {
	secretEmpty := isEmptyRef(v.SecretKeyRef.Namespace, v.SecretKeyRef.Name, v.SecretKeyRef.Key)
	configMapEmpty := isEmptyRef(v.ConfigMapKeyRef.Namespace, v.ConfigMapKeyRef.Name, v.ConfigMapKeyRef.Key)
	if secretEmpty && configMapEmpty {
		return json.Marshal(v.Value)
	}

	obj := struct {
		SecretKeyRef    *GlobalSecretKeySelector    `json:"secretKeyRef,omitempty"`
		ConfigMapKeyRef *GlobalConfigMapKeySelector `json:"configMapKeyRef,omitempty"`
		Value           string                      `json:"value,omitempty"`
	}{Value: v.Value}
	if !secretEmpty {
		obj.SecretKeyRef = &v.SecretKeyRef
	}
	if !configMapEmpty {
		obj.ConfigMapKeyRef = &v.ConfigMapKeyRef
	}
	return json.Marshal(obj)
}

// UnmarshalJSON accepts what upstream accepts:
//
//   - an object: decoded field by field and replacing all three fields.
//     As upstream, unknown keys inside it are ignored (upstream decodes it
//     with a plain json.Unmarshal, so a strict outer decoder does not
//     reach in here) and "value" must be a string.
//   - a string: its (unescaped) content becomes Value.
//   - a number or true/false: upstream keeps the literal text as Value
//     (e.g. 4711 -> "4711", true -> "true"). YAML manifests produce these
//     for unquoted IDs such as Hetzner network IDs, so they are accepted the
//     same way.
//
// Deliberate differences from upstream, which strips the surrounding quotes
// and runs strconv.Unquote on whatever is left of the raw bytes:
//
//   - null leaves the value unchanged (encoding/json's convention, and what
//     upstream does for ConfigVarBool). Upstream stores the four letters
//     "null" as Value.
//   - an array is an error. Upstream accepts some arrays as their literal
//     text ([1,2] -> "[1,2]") and rejects others (["a"]), by accident.
//   - JSON escapes that Go's strconv.Unquote rejects (\/ and UTF-16
//     surrogate pairs) are decoded as JSON defines them instead of failing.
func (v *ConfigVarString) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return fmt.Errorf("providerconfig: empty JSON for ConfigVarString")
	}
	switch c := data[0]; {
	case c == '{':
		var fields configVarStringFields
		if err := json.Unmarshal(data, &fields); err != nil {
			return fmt.Errorf("providerconfig: decoding ConfigVarString object: %w", err)
		}
		*v = ConfigVarString(fields)
	case c == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("providerconfig: decoding ConfigVarString: %w", err)
		}
		v.Value = s
	case bytes.Equal(data, []byte("null")):
		// Unset; see the doc comment.
	case bytes.Equal(data, []byte("true")), bytes.Equal(data, []byte("false")):
		v.Value = string(data)
	case c == '-' || ('0' <= c && c <= '9'):
		var n json.Number
		if err := json.Unmarshal(data, &n); err != nil {
			return fmt.Errorf("providerconfig: decoding ConfigVarString: %w", err)
		}
		v.Value = string(data)
	default:
		return fmt.Errorf("providerconfig: ConfigVarString must be a string, a number, a bool or an object, got %.20q", data)
	}
	return nil
}

// ConfigVarBool is a bool that is given inline or read from a Secret or
// ConfigMap key. A nil Value means "not set".
//
// On the wire it is either a bare JSON bool or null, or an object
// {"secretKeyRef": {...}, "configMapKeyRef": {...}, "value": true}.
type ConfigVarBool struct {
	Value           *bool                      `json:"value,omitempty"`
	SecretKeyRef    GlobalSecretKeySelector    `json:"secretKeyRef,omitempty"`
	ConfigMapKeyRef GlobalConfigMapKeySelector `json:"configMapKeyRef,omitempty"`
}

// configVarBoolFields has ConfigVarBool's fields but not its methods.
type configVarBoolFields ConfigVarBool

// MarshalJSON emits the bare Value (true, false, or null when unset) when
// neither selector is set, and otherwise an object with the set selectors
// followed by the value if it is set, in upstream's key order. The output
// is byte for byte what upstream produces.
func (v ConfigVarBool) MarshalJSON() ([]byte, error) {
	secretEmpty := isEmptyRef(v.SecretKeyRef.Namespace, v.SecretKeyRef.Name, v.SecretKeyRef.Key)
	configMapEmpty := isEmptyRef(v.ConfigMapKeyRef.Namespace, v.ConfigMapKeyRef.Name, v.ConfigMapKeyRef.Key)
	if secretEmpty && configMapEmpty {
		return json.Marshal(v.Value)
	}

	obj := struct {
		SecretKeyRef    *GlobalSecretKeySelector    `json:"secretKeyRef,omitempty"`
		ConfigMapKeyRef *GlobalConfigMapKeySelector `json:"configMapKeyRef,omitempty"`
		Value           *bool                       `json:"value,omitempty"`
	}{Value: v.Value}
	if !secretEmpty {
		obj.SecretKeyRef = &v.SecretKeyRef
	}
	if !configMapEmpty {
		obj.ConfigMapKeyRef = &v.ConfigMapKeyRef
	}
	return json.Marshal(obj)
}

// UnmarshalJSON accepts, exactly as upstream: an object (replacing all
// three fields; unknown keys inside it are ignored, "value" must be a bool
// or null), a bare true or false, or null (which unsets Value). Anything
// else is an error, including a bool spelled as a string ("true"), which
// upstream rejects as well.
func (v *ConfigVarBool) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if bytes.HasPrefix(data, []byte("{")) {
		var fields configVarBoolFields
		if err := json.Unmarshal(data, &fields); err != nil {
			return fmt.Errorf("providerconfig: decoding ConfigVarBool object: %w", err)
		}
		*v = ConfigVarBool(fields)
		return nil
	}
	var b *bool
	if err := json.Unmarshal(data, &b); err != nil {
		return fmt.Errorf("providerconfig: ConfigVarBool must be a bool, null or an object: %w", err)
	}
	v.Value = b
	return nil
}
