package hzprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// DefaultEndpoint is the public Hetzner Cloud API.
const DefaultEndpoint = "https://api.hetzner.cloud/v1"

// RawConfig is the cloudProviderSpec of a Hetzner Machine: upstream
// machine-controller's hetzner RawConfig, plus Endpoint. String fields are
// ConfigVarStrings (a bare string or {value, secretKeyRef,
// configMapKeyRef}); they stay raw until resolved.
type RawConfig struct {
	Token                json.RawMessage   `json:"token,omitempty"`
	ServerType           json.RawMessage   `json:"serverType"`
	Datacenter           json.RawMessage   `json:"datacenter"`
	Image                json.RawMessage   `json:"image"`
	Location             json.RawMessage   `json:"location"`
	PlacementGroupPrefix json.RawMessage   `json:"placementGroupPrefix"`
	Networks             []json.RawMessage `json:"networks"`
	Firewalls            []json.RawMessage `json:"firewalls"`
	Labels               map[string]string `json:"labels,omitempty"`
	AssignPublicIPv4     json.RawMessage   `json:"assignPublicIPv4,omitempty"`
	AssignPublicIPv6     json.RawMessage   `json:"assignPublicIPv6,omitempty"`
	// Endpoint overrides the API base URL (default DefaultEndpoint), e.g.
	// a simulator or a proxy. The host's policy must allow its host.
	Endpoint json.RawMessage `json:"endpoint,omitempty"`
}

// Config is a resolved RawConfig.
type Config struct {
	Token            string
	ServerType       string
	Datacenter       string
	Image            string
	Location         string
	Labels           map[string]string
	AssignPublicIPv4 bool
	AssignPublicIPv6 bool
	Endpoint         string
	OperatingSystem  string
	// OperatingSystemSpecSet is whether providerSpec.operatingSystemSpec
	// is given, which upstream requires.
	OperatingSystemSpecSet bool
	PlacementGroupPrefix   string
	Networks               []string
	Firewalls              []string
}

// decodeRaw decodes providerSpec.value and its cloudProviderSpec strictly,
// as upstream does: an unknown field is a mistake in the Machine.
func decodeRaw(spec provider.MachineSpec) (provider.Config, RawConfig, error) {
	var raw RawConfig
	pc, err := provider.DecodeConfig(spec)
	if err != nil {
		return pc, raw, err
	}
	if len(pc.CloudProviderSpec) == 0 || string(pc.CloudProviderSpec) == "null" {
		return pc, raw, provider.Terminal(provider.InvalidConfiguration, "cloudProviderSpec is empty")
	}
	dec := json.NewDecoder(bytes.NewReader(pc.CloudProviderSpec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return pc, raw, provider.Terminal(provider.InvalidConfiguration, "failed to decode cloudProviderSpec: %v", err)
	}
	return pc, raw, nil
}

// getConfig decodes and resolves the configuration. Values that reference
// a Secret or ConfigMap are resolved by the host (config_var); the token
// falls back to the host's HZ_TOKEN when the policy allows it.
func getConfig(ctx context.Context, spec provider.MachineSpec, withToken bool) (*Config, error) {
	pc, raw, err := decodeRaw(spec)
	if err != nil {
		return nil, err
	}
	c := &Config{Labels: raw.Labels, OperatingSystem: pc.OperatingSystem,
		OperatingSystemSpecSet: len(pc.OperatingSystemSpec) > 0 && string(pc.OperatingSystemSpec) != "null"}
	if withToken {
		if c.Token, err = resolveToken(ctx, raw.Token); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *string
	}{
		{"serverType", raw.ServerType, &c.ServerType},
		{"datacenter", raw.Datacenter, &c.Datacenter},
		{"image", raw.Image, &c.Image},
		{"location", raw.Location, &c.Location},
		{"endpoint", raw.Endpoint, &c.Endpoint},
		{"placementGroupPrefix", raw.PlacementGroupPrefix, &c.PlacementGroupPrefix},
	} {
		if *f.dst, err = resolve(ctx, f.name, f.raw, ""); err != nil {
			return nil, err
		}
	}
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	c.Endpoint = strings.TrimRight(c.Endpoint, "/")
	if c.AssignPublicIPv4, err = resolveBool(ctx, "assignPublicIPv4", raw.AssignPublicIPv4, true); err != nil {
		return nil, err
	}
	if c.AssignPublicIPv6, err = resolveBool(ctx, "assignPublicIPv6", raw.AssignPublicIPv6, true); err != nil {
		return nil, err
	}
	for i, n := range raw.Networks {
		v, err := resolve(ctx, fmt.Sprintf("networks[%d]", i), n, "")
		if err != nil {
			return nil, err
		}
		c.Networks = append(c.Networks, v)
	}
	for i, f := range raw.Firewalls {
		v, err := resolve(ctx, fmt.Sprintf("firewalls[%d]", i), f, "")
		if err != nil {
			return nil, err
		}
		c.Firewalls = append(c.Firewalls, v)
	}
	return c, nil
}

// resolveToken resolves the token as upstream does: the Secret, the
// ConfigMap or the value, else HZ_TOKEN; and HZ_TOKEN too when reading the
// Secret or ConfigMap fails. The host answers HZ_TOKEN only when the
// policy allows the variable (AllowedEnv); without it, the failed read is
// the error, naming the Secret.
func resolveToken(ctx context.Context, raw json.RawMessage) (string, error) {
	tok, err := resolve(ctx, "token", raw, "HZ_TOKEN")
	if err == nil {
		return tok, nil
	}
	env, envErr := provider.ConfigVarString(ctx, json.RawMessage("null"), "HZ_TOKEN")
	if envErr != nil || env == "" {
		return "", err
	}
	provider.Logger(ctx).Warn("reading the token's reference failed, using HZ_TOKEN", "error", err.Error())
	return env, nil
}

// checkDatacenter refuses what AddDefaults cannot migrate: a numeric
// datacenter ID, or a datacenter with a location.
func checkDatacenter(dc, loc string) error {
	if dc == "" {
		return nil
	}
	if _, err := strconv.ParseInt(dc, 10, 64); err == nil {
		return provider.Terminal(provider.InvalidConfiguration,
			"datacenter %q is a numeric ID: give its location (e.g. fsn1) in location instead", dc)
	}
	if loc != "" {
		return provider.Terminal(provider.InvalidConfiguration, "location and datacenter must not be set at the same time")
	}
	return nil
}

type configVar struct {
	Value           *string         `json:"value"`
	SecretKeyRef    json.RawMessage `json:"secretKeyRef"`
	ConfigMapKeyRef json.RawMessage `json:"configMapKeyRef"`
}

type keyRef struct {
	Namespace, Name, Key string
}

func isRef(raw json.RawMessage) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	var r keyRef
	_ = json.Unmarshal(raw, &r)
	return r.Namespace != "" || r.Name != "" || r.Key != ""
}

// resolve returns a ConfigVarString's value. Inline values are read here;
// only references (and env fallbacks) cost a host call.
func resolve(ctx context.Context, field string, raw json.RawMessage, envFallback string) (string, error) {
	if len(raw) > 0 && string(raw) != "null" {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if s != "" || envFallback == "" {
				return s, nil
			}
		} else {
			var v configVar
			if err := json.Unmarshal(raw, &v); err != nil {
				return "", provider.Terminal(provider.InvalidConfiguration, "invalid value of %q: %v", field, err)
			}
			if !isRef(v.SecretKeyRef) && !isRef(v.ConfigMapKeyRef) && (v.Value != nil && *v.Value != "" || envFallback == "") {
				if v.Value == nil {
					return "", nil
				}
				return *v.Value, nil
			}
		}
	} else if envFallback == "" {
		return "", nil
	}
	s, err := provider.ConfigVarString(ctx, raw, envFallback)
	if err != nil {
		return "", configVarError(field, err)
	}
	return s, nil
}

func resolveBool(ctx context.Context, field string, raw json.RawMessage, def bool) (bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return def, nil
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b, nil
	}
	var v struct {
		Value           *bool           `json:"value"`
		SecretKeyRef    json.RawMessage `json:"secretKeyRef"`
		ConfigMapKeyRef json.RawMessage `json:"configMapKeyRef"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, provider.Terminal(provider.InvalidConfiguration, "invalid value of %q: %v", field, err)
	}
	if !isRef(v.SecretKeyRef) && !isRef(v.ConfigMapKeyRef) {
		if v.Value == nil {
			return def, nil
		}
		return *v.Value, nil
	}
	b, err := provider.ConfigVarBool(ctx, raw, "")
	if err != nil {
		return false, configVarError(field, err)
	}
	return b, nil
}

// configVarError classifies a failed config_var: the host refusing or not
// finding the reference is the Machine author's mistake (terminal); a
// failed read of the API server is transient.
func configVarError(field string, err error) error {
	var he *provider.HostError
	if errors.As(err, &he) && he.Errno == abi.ErrnoFailed {
		return fmt.Errorf("failed to get the value of %q: %w", field, err)
	}
	return provider.Terminal(provider.InvalidConfiguration, "failed to get the value of %q: %v", field, err)
}

// imageForOS is upstream's default image per operating system. With an
// explicit image, any operating system goes.
func imageForOS(os string) (string, error) {
	switch os {
	case "ubuntu":
		return "ubuntu-24.04", nil
	case "rockylinux":
		return "rocky-9", nil
	}
	return "", fmt.Errorf("operating system %q has no default image on hetzner (ubuntu, rockylinux have one): set image", os)
}

// locationOfDatacenter derives a location from a datacenter name: Hetzner
// names datacenters "<location>-dc<N>" (fsn1-dc14, ash-dc1).
func locationOfDatacenter(dc string) (string, bool) {
	i := strings.LastIndex(dc, "-dc")
	if i <= 0 {
		return "", false
	}
	return dc[:i], true
}
