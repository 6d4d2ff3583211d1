//go:build !wasip1

package e2e

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/examples/digitalocean/doprovider"
)

// upstreamRawConfig is upstream machine-controller's DigitalOcean
// RawConfig, transcribed field for field (names, JSON names, types) from
// sdk/cloudprovider/digitalocean/types.go at commit
// f1068332ad56c8f4b2498ca5b46ffc0b3582a083 (the file's last change:
// c87c24541364de60e0e4cf8cae3a184f82a2a102), which upstream's GetConfig
// decodes with jsonutil.StrictUnmarshal.
type upstreamRawConfig struct {
	Token             configVarString   `json:"token,omitempty"`
	Region            configVarString   `json:"region"`
	Size              configVarString   `json:"size"`
	Backups           configVarBool     `json:"backups"`
	IPv6              configVarBool     `json:"ipv6"`
	PrivateNetworking configVarBool     `json:"private_networking"`
	Monitoring        configVarBool     `json:"monitoring"`
	Tags              []configVarString `json:"tags,omitempty"`
}

// keyRef is upstream's GlobalSecretKeySelector / GlobalConfigMapKeySelector.
type keyRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Key       string `json:"key"`
}

// configVarString is upstream's providerconfig.ConfigVarString: a bare
// value, or an object of value, secretKeyRef and configMapKeyRef.
type configVarString struct {
	Value           string  `json:"value,omitempty"`
	SecretKeyRef    *keyRef `json:"secretKeyRef,omitempty"`
	ConfigMapKeyRef *keyRef `json:"configMapKeyRef,omitempty"`
}

func (c *configVarString) UnmarshalJSON(b []byte) error {
	if !bytes.HasPrefix(b, []byte("{")) {
		return json.Unmarshal(b, &c.Value)
	}
	type plain configVarString
	return strictUnmarshal(b, (*plain)(c))
}

// configVarBool is upstream's providerconfig.ConfigVarBool.
type configVarBool struct {
	Value           *bool   `json:"value,omitempty"`
	SecretKeyRef    *keyRef `json:"secretKeyRef,omitempty"`
	ConfigMapKeyRef *keyRef `json:"configMapKeyRef,omitempty"`
}

func (c *configVarBool) UnmarshalJSON(b []byte) error {
	if !bytes.HasPrefix(b, []byte("{")) {
		return json.Unmarshal(b, &c.Value)
	}
	type plain configVarBool
	return strictUnmarshal(b, (*plain)(c))
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// decodeUpstream decodes a providerSpec.value's cloudProviderSpec as
// upstream's GetConfig would.
func decodeUpstream(t *testing.T, value []byte) (upstreamRawConfig, error) {
	t.Helper()
	var pc struct {
		CloudProvider     string          `json:"cloudProvider"`
		CloudProviderSpec json.RawMessage `json:"cloudProviderSpec"`
	}
	if err := json.Unmarshal(value, &pc); err != nil {
		t.Fatal(err)
	}
	if pc.CloudProvider != "digitalocean" {
		t.Errorf("cloudProvider = %q", pc.CloudProvider)
	}
	var raw upstreamRawConfig
	return raw, strictUnmarshal(pc.CloudProviderSpec, &raw)
}

// The Machine spec the conformance suite and the other tests run with is
// one upstream's provider accepts: every field is one of its RawConfig's,
// of its type.
func TestSpecsDecodeAsUpstreamRawConfig(t *testing.T) {
	for name, value := range map[string][]byte{
		"conformance": conformanceSpec,
		"fixture":     providerSpec(cloudProviderSpec(nil), nil),
	} {
		raw, err := decodeUpstream(t, value)
		if err != nil {
			t.Fatalf("%s spec: %v", name, err)
		}
		if raw.Region.Value != "fra1" || raw.Size.Value == "" || raw.Token.SecretKeyRef == nil ||
			raw.PrivateNetworking.Value == nil || !*raw.PrivateNetworking.Value || len(raw.Tags) != 1 {
			t.Errorf("%s spec decoded as %+v", name, raw)
		}
	}
	// The decoding is strict: the Hetzner provider's endpoint, say, is no
	// field of upstream's.
	if _, err := decodeUpstream(t, providerSpec(cloudProviderSpec(map[string]any{"endpoint": "x"}), nil)); err == nil ||
		!strings.Contains(err.Error(), `unknown field "endpoint"`) {
		t.Errorf("an endpoint field: %v", err)
	}
}

// The guest's RawConfig has upstream's JSON fields, no more, no fewer.
func TestRawConfigFieldsAreUpstreams(t *testing.T) {
	fields := func(typ reflect.Type) []string {
		var out []string
		for i := range typ.NumField() {
			out = append(out, typ.Field(i).Tag.Get("json"))
		}
		slices.Sort(out)
		return out
	}
	ours, theirs := fields(reflect.TypeFor[doprovider.RawConfig]()), fields(reflect.TypeFor[upstreamRawConfig]())
	if !slices.Equal(ours, theirs) {
		t.Errorf("doprovider.RawConfig's JSON fields %v, upstream's %v", ours, theirs)
	}
}
