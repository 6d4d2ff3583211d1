package doprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// RawConfig is the cloudProviderSpec of a DigitalOcean Machine: upstream's
// RawConfig (sdk/cloudprovider/digitalocean/types.go), field for field.
// The string fields are ConfigVarStrings and the booleans ConfigVarBools
// (a bare value, or {value, secretKeyRef, configMapKeyRef}); they stay raw
// until resolved. There is no endpoint: the API is always
// https://api.digitalocean.com/ (a test reaches a simulator through the
// host policy's hostAliases).
type RawConfig struct {
	Token             json.RawMessage   `json:"token,omitempty"`
	Region            json.RawMessage   `json:"region"`
	Size              json.RawMessage   `json:"size"`
	Backups           json.RawMessage   `json:"backups"`
	IPv6              json.RawMessage   `json:"ipv6"`
	PrivateNetworking json.RawMessage   `json:"private_networking"`
	Monitoring        json.RawMessage   `json:"monitoring"`
	Tags              []json.RawMessage `json:"tags,omitempty"`
}

// Config is a resolved RawConfig, with what the provider reads from the
// rest of providerSpec.value.
type Config struct {
	Token             string
	Region            string
	Size              string
	Backups           bool
	IPv6              bool
	PrivateNetworking bool
	Monitoring        bool
	Tags              []string
	OperatingSystem   string
	// IPFamily is providerSpec.value.network.ipFamily.
	IPFamily string
}

// getConfig decodes providerSpec.value and its cloudProviderSpec strictly,
// as upstream does (an unknown field is a mistake in the Machine), and
// resolves the values; the token only withToken (it costs a host call).
func getConfig(ctx context.Context, spec provider.MachineSpec, withToken bool) (*Config, error) {
	pc, err := provider.DecodeConfig(spec)
	if err != nil {
		return nil, err
	}
	if len(pc.OperatingSystemSpec) == 0 || string(pc.OperatingSystemSpec) == "null" {
		return nil, provider.Terminal(provider.InvalidConfiguration, "operatingSystemSpec in the MachineDeployment cannot be empty")
	}
	var raw RawConfig
	if len(pc.CloudProviderSpec) == 0 || string(pc.CloudProviderSpec) == "null" {
		return nil, provider.Terminal(provider.InvalidConfiguration, "cloudProviderSpec is empty")
	}
	dec := json.NewDecoder(bytes.NewReader(pc.CloudProviderSpec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, provider.Terminal(provider.InvalidConfiguration, "failed to decode cloudProviderSpec: %v", err)
	}
	c := &Config{OperatingSystem: pc.OperatingSystem}
	if len(pc.Network) > 0 {
		var n struct {
			IPFamily string `json:"ipFamily"`
		}
		if err := json.Unmarshal(pc.Network, &n); err != nil {
			return nil, provider.Terminal(provider.InvalidConfiguration, "failed to decode network: %v", err)
		}
		c.IPFamily = n.IPFamily
	}
	if withToken {
		if c.Token, err = resolveToken(ctx, raw.Token); err != nil {
			return nil, err
		}
	}
	if c.Region, err = resolveString(ctx, "region", raw.Region); err != nil {
		return nil, err
	}
	if c.Size, err = resolveString(ctx, "size", raw.Size); err != nil {
		return nil, err
	}
	for _, b := range []struct {
		name string
		raw  json.RawMessage
		dst  *bool
	}{
		{"backups", raw.Backups, &c.Backups},
		{"ipv6", raw.IPv6, &c.IPv6},
		{"private_networking", raw.PrivateNetworking, &c.PrivateNetworking},
		{"monitoring", raw.Monitoring, &c.Monitoring},
	} {
		if *b.dst, err = resolveBool(ctx, b.name, b.raw); err != nil {
			return nil, err
		}
	}
	for i, t := range raw.Tags {
		v, err := resolveString(ctx, fmt.Sprintf("tags[%d]", i), t)
		if err != nil {
			return nil, err
		}
		c.Tags = append(c.Tags, v)
	}
	return c, nil
}

// resolveToken resolves the token as upstream's GetStringValueOrEnv does:
// the Secret, the ConfigMap or the value, else DO_TOKEN; and DO_TOKEN too
// when reading the reference fails. The host answers DO_TOKEN only when
// its policy allows the variable; without it, the failed read is the
// error, naming the Secret.
func resolveToken(ctx context.Context, raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s, nil // inline: no host call
	}
	tok, err := provider.ConfigVarString(ctx, raw, TokenEnv)
	if err == nil {
		return tok, nil
	}
	env, envErr := provider.ConfigVarString(ctx, json.RawMessage("null"), TokenEnv)
	if envErr != nil || env == "" {
		return "", configVarError("token", err)
	}
	provider.Logger(ctx).Warn("reading the token's reference failed, using "+TokenEnv, "error", err.Error())
	return env, nil
}

// resolveString resolves a ConfigVarString; a bare string costs no host
// call.
func resolveString(ctx context.Context, field string, raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	v, err := provider.ConfigVarString(ctx, raw, "")
	if err != nil {
		return "", configVarError(field, err)
	}
	return v, nil
}

// resolveBool resolves a ConfigVarBool (unset: false); a bare boolean
// costs no host call.
func resolveBool(ctx context.Context, field string, raw json.RawMessage) (bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return false, nil
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b, nil
	}
	v, err := provider.ConfigVarBool(ctx, raw, "")
	if err != nil {
		return false, configVarError(field, err)
	}
	return v, nil
}

// configVarError classifies a failed config_var: the host refusing or not
// finding the reference, or a value of the wrong type, is the Machine
// author's mistake (terminal); a failed read of the API server is
// transient.
func configVarError(field string, err error) error {
	var he *provider.HostError
	if errors.As(err, &he) && he.Errno == abi.ErrnoFailed {
		return fmt.Errorf("failed to get the value of %q: %w", field, err)
	}
	return provider.Terminal(provider.InvalidConfiguration, "failed to get the value of %q: %v", field, err)
}

// slugForOS is upstream's image per operating system.
func slugForOS(os string) (string, error) {
	switch os {
	case "ubuntu":
		return "ubuntu-24-04-x64", nil
	case "rockylinux":
		return "rockylinux-9-x64", nil
	}
	return "", errors.New("os not supported")
}

// validTag is what DigitalOcean accepts as a tag name.
var validTag = regexp.MustCompile(`^[a-zA-Z0-9_:-]{1,255}$`)

// check is what Validate and Create check without an API call.
func check(c *Config) error {
	switch {
	case c.Token == "":
		return provider.Terminal(provider.InvalidConfiguration, "token is missing: set cloudProviderSpec.token (e.g. a Secret reference) or "+TokenEnv)
	case c.Region == "":
		return provider.Terminal(provider.InvalidConfiguration, "region is missing")
	case c.Size == "":
		return provider.Terminal(provider.InvalidConfiguration, "size is missing")
	}
	if _, err := slugForOS(c.OperatingSystem); err != nil {
		return provider.Terminal(provider.InvalidConfiguration, "invalid operating system specified %q: %v", c.OperatingSystem, err)
	}
	switch c.IPFamily {
	case "", "IPv4", "IPv4+IPv6", "IPv6+IPv4":
	case "IPv6":
		return provider.Terminal(provider.InvalidConfiguration, "IPv6-only network family not supported yet")
	default:
		return provider.Terminal(provider.InvalidConfiguration, "unknown IP family %q, only IPv4,IPv6,IPv4+IPv6 are valid values", c.IPFamily)
	}
	for _, t := range c.Tags {
		if !validTag.MatchString(t) {
			return provider.Terminal(provider.InvalidConfiguration,
				"tag %q is not a DigitalOcean tag name (letters, digits, colons, dashes and underscores, at most 255)", t)
		}
	}
	return nil
}

// dualstack is upstream's IsDualstack of the network's IP family.
func (c *Config) dualstack() bool { return c.IPFamily == "IPv4+IPv6" || c.IPFamily == "IPv6+IPv4" }
