package provider

import (
	"encoding/json"
	"fmt"

	"github.com/wasmprov/wasmprov/guests/go/provider/internal/jsonscan"
)

// The SDK decodes its own documents — the Machine, its spec, Config — member
// by member instead of with encoding/json: inside a Go guest encoding/json's
// reflection runs as WebAssembly and dominates a call's cost. The result is
// the same as json.Unmarshal into these types (tests and a fuzz target check
// that); unknown members are ignored, as encoding/json ignores them, and
// member names match case-sensitively, as the Kubernetes API server decodes
// (encoding/json would also take "Spec" for "spec").

func raw(v []byte) json.RawMessage {
	if jsonscan.IsNull(v) {
		return nil
	}
	return append(json.RawMessage(nil), v...)
}

// optString decodes an optional string: null is nil.
func optString(v []byte) (*string, error) {
	if jsonscan.IsNull(v) {
		return nil, nil
	}
	s, err := jsonscan.String(v)
	return &s, err
}

func decodeObjectMeta(d []byte, m *ObjectMeta) error {
	return jsonscan.Object(d, func(k []byte, v []byte) (err error) {
		switch string(k) {
		case "name":
			m.Name, err = jsonscan.String(v)
		case "generateName":
			m.GenerateName, err = jsonscan.String(v)
		case "namespace":
			m.Namespace, err = jsonscan.String(v)
		case "selfLink":
			m.SelfLink, err = jsonscan.String(v)
		case "uid":
			m.UID, err = jsonscan.String(v)
		case "resourceVersion":
			m.ResourceVersion, err = jsonscan.String(v)
		case "generation":
			m.Generation, err = jsonscan.Int64(v)
		case "creationTimestamp":
			m.CreationTimestamp = append(json.RawMessage(nil), v...)
		case "deletionTimestamp":
			m.DeletionTimestamp, err = optString(v)
		case "deletionGracePeriodSeconds":
			if !jsonscan.IsNull(v) {
				var n int64
				n, err = jsonscan.Int64(v)
				m.DeletionGracePeriodSeconds = &n
			}
		case "labels":
			m.Labels, err = jsonscan.StringMap(v)
		case "annotations":
			m.Annotations, err = jsonscan.StringMap(v)
		case "ownerReferences":
			m.OwnerReferences = raw(v)
		case "finalizers":
			m.Finalizers, err = jsonscan.StringSlice(v)
		case "managedFields":
			m.ManagedFields = raw(v)
		}
		return err
	})
}

func decodeMachineSpec(d []byte, s *MachineSpec) error {
	return jsonscan.Object(d, func(k []byte, v []byte) (err error) {
		switch string(k) {
		case "metadata":
			err = decodeObjectMeta(v, &s.ObjectMeta)
		case "taints":
			s.Taints = raw(v)
		case "providerSpec":
			err = jsonscan.Object(v, func(k []byte, v []byte) error {
				switch string(k) {
				case "value":
					s.ProviderSpec.Value = raw(v)
				case "valueFrom":
					s.ProviderSpec.ValueFrom = raw(v)
				}
				return nil
			})
		case "versions":
			err = jsonscan.Object(v, func(k []byte, v []byte) (err error) {
				if string(k) == "kubelet" {
					s.Versions.Kubelet, err = jsonscan.String(v)
				}
				return err
			})
		case "configSource":
			s.ConfigSource = raw(v)
		case "providerID":
			s.ProviderID, err = optString(v)
		}
		return err
	})
}

func decodeMachine(d []byte, m *Machine) error {
	return jsonscan.Object(d, func(k []byte, v []byte) (err error) {
		switch string(k) {
		case "apiVersion":
			m.APIVersion, err = jsonscan.String(v)
		case "kind":
			m.Kind, err = jsonscan.String(v)
		case "metadata":
			err = decodeObjectMeta(v, &m.ObjectMeta)
		case "spec":
			err = decodeMachineSpec(v, &m.Spec)
		case "status":
			m.Status = raw(v)
		}
		return err
	})
}

// decodeMachineList decodes the items of a MachineList; its own metadata
// (a resourceVersion, a continue token) means nothing to a provider.
func decodeMachineList(d []byte) ([]Machine, error) {
	var items []Machine
	err := jsonscan.Object(d, func(k []byte, v []byte) error {
		if string(k) != "items" {
			return nil
		}
		return jsonscan.Array(v, func(item []byte) error {
			items = append(items, Machine{})
			return decodeMachine(item, &items[len(items)-1])
		})
	})
	return items, err
}

func decodeConfig(d []byte, c *Config) error {
	return jsonscan.Object(d, func(k []byte, v []byte) (err error) {
		switch string(k) {
		case "sshPublicKeys":
			c.SSHPublicKeys, err = jsonscan.StringSlice(v)
		case "caPublicKey":
			c.CAPublicKey, err = jsonscan.String(v)
		case "cloudProvider":
			c.CloudProvider, err = jsonscan.String(v)
		case "cloudProviderSpec":
			c.CloudProviderSpec = raw(v)
		case "operatingSystem":
			c.OperatingSystem, err = jsonscan.String(v)
		case "operatingSystemSpec":
			c.OperatingSystemSpec = raw(v)
		case "network":
			c.Network = raw(v)
		case "overwriteCloudConfig":
			c.OverwriteCloudConfig, err = optString(v)
		}
		return err
	})
}

// Fields binds JSON object members to Go variables for DecodeFields. The
// supported targets are *string, *bool, *int, *int64, *float64, *[]string,
// *map[string]string and *json.RawMessage (anything, kept raw).
type Fields map[string]any

// DecodeFields decodes the members of the JSON object d named in fields and
// ignores the others. It is the fast path for a provider's own
// cloudProviderSpec: inside a guest it is several times cheaper than
// json.Unmarshal, which needs reflection; natively it is about as fast. A
// type mismatch or malformed JSON is an error naming the member.
func DecodeFields(d []byte, fields Fields) error {
	return jsonscan.Object(d, func(k []byte, v []byte) error {
		target, ok := fields[string(k)]
		if !ok {
			return nil
		}
		var err error
		switch t := target.(type) {
		case *string:
			*t, err = jsonscan.String(v)
		case *bool:
			*t, err = jsonscan.Bool(v)
		case *int:
			var n int64
			n, err = jsonscan.Int64(v)
			*t = int(n)
		case *int64:
			*t, err = jsonscan.Int64(v)
		case *float64:
			*t, err = jsonscan.Float64(v)
		case *[]string:
			*t, err = jsonscan.StringSlice(v)
		case *map[string]string:
			*t, err = jsonscan.StringMap(v)
		case *json.RawMessage:
			*t = raw(v)
		default:
			return fmt.Errorf("DecodeFields: unsupported target %T for %q", target, string(k))
		}
		if err != nil {
			return fmt.Errorf("member %q: %w", string(k), err)
		}
		return nil
	})
}
