package hzprovider

import (
	"context"
	"encoding/json"

	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// AddDefaults migrates the legacy datacenter field to location (Hetzner
// datacenters are named "<location>-dc<N>") and fills in the default image
// of the operating system. It makes no API call.
func (p *Provider) AddDefaults(_ context.Context, spec provider.MachineSpec) (provider.MachineSpec, error) {
	pc, raw, err := decodeRaw(spec)
	if err != nil {
		return spec, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(pc.CloudProviderSpec, &fields); err != nil {
		return spec, provider.Terminal(provider.InvalidConfiguration, "failed to decode cloudProviderSpec: %v", err)
	}
	changed := false
	var dc, loc string
	_ = json.Unmarshal(raw.Datacenter, &dc)
	_ = json.Unmarshal(raw.Location, &loc)
	if err := checkDatacenter(dc, loc); err != nil {
		return spec, err
	}
	if dc != "" && loc == "" {
		if l, ok := locationOfDatacenter(dc); ok {
			fields["location"], _ = json.Marshal(l)
			delete(fields, "datacenter")
			changed = true
		}
	}
	if len(raw.Image) == 0 || string(raw.Image) == "null" || string(raw.Image) == `""` {
		if img, err := imageForOS(pc.OperatingSystem); err == nil {
			fields["image"], _ = json.Marshal(img)
			changed = true
		}
	}
	if !changed {
		return spec, nil
	}
	cps, err := json.Marshal(fields)
	if err != nil {
		return spec, err
	}
	var value map[string]json.RawMessage
	if err := json.Unmarshal(spec.ProviderSpec.Value, &value); err != nil {
		return spec, provider.Terminal(provider.InvalidConfiguration, "failed to decode providerSpec.value: %v", err)
	}
	value["cloudProviderSpec"] = cps
	if spec.ProviderSpec.Value, err = json.Marshal(value); err != nil {
		return spec, err
	}
	return spec, nil
}

// Validate checks the configuration, then that the location (or
// datacenter), server type and image exist.
func (p *Provider) Validate(ctx context.Context, spec provider.MachineSpec) error {
	c, err := getConfig(ctx, spec, true)
	if err != nil {
		return err
	}
	if err := check(c); err != nil {
		return err
	}
	_, err = p.lookups(ctx, p.api(c), c)
	return err
}

// check is what Validate and Create check without an API call.
func check(c *Config) error {
	if c.Token == "" {
		return provider.Terminal(provider.InvalidConfiguration, "token is missing: set cloudProviderSpec.token (a Secret reference) or HZ_TOKEN")
	}
	if !c.OperatingSystemSpecSet {
		// As upstream: the OS's provisioning settings must be explicit.
		return provider.Terminal(provider.InvalidConfiguration, "operatingSystemSpec is missing: set providerSpec.value.operatingSystemSpec (e.g. {distUpgradeOnBoot: false})")
	}
	if c.Image == "" {
		if _, err := imageForOS(c.OperatingSystem); err != nil {
			return provider.Terminal(provider.InvalidConfiguration, "invalid/not supported operating system specified %q: %v", c.OperatingSystem, err)
		}
	}
	if err := checkDatacenter(c.Datacenter, c.Location); err != nil {
		return err
	}
	if c.ServerType == "" {
		return provider.Terminal(provider.InvalidConfiguration, "serverType is missing")
	}
	if !c.AssignPublicIPv4 && !c.AssignPublicIPv6 && len(c.Networks) == 0 {
		return provider.Terminal(provider.InvalidConfiguration,
			"assignPublicIPv4 and assignPublicIPv6 are both false and no networks are set: the server would be unreachable")
	}
	return nil
}

// resolved is what lookups found.
type resolved struct {
	serverType *ServerType
	image      *Image
	// location is the location, or the datacenter's location: servers
	// are created by location, as upstream does.
	location  string
	networks  []int64
	firewalls []int64
}

// lookups resolves location or datacenter, server type and image; a
// missing one is an invalid configuration.
func (p *Provider) lookups(ctx context.Context, api API, c *Config) (*resolved, error) {
	r := &resolved{location: c.Location}
	if c.Location != "" {
		l, err := api.Location(ctx, c.Location)
		if err != nil {
			return nil, classify(err, "failed to get location")
		}
		if l == nil {
			return nil, provider.Terminal(provider.InvalidConfiguration, "location %q does not exist", c.Location)
		}
	}
	if c.Datacenter != "" {
		d, err := api.Datacenter(ctx, c.Datacenter)
		if err != nil {
			return nil, classify(err, "failed to get datacenter")
		}
		if d == nil {
			return nil, provider.Terminal(provider.InvalidConfiguration, "datacenter %q does not exist", c.Datacenter)
		}
		r.location = d.Location
	}
	st, err := api.ServerType(ctx, c.ServerType)
	if err != nil {
		return nil, classify(err, "failed to get server type")
	}
	if st == nil {
		return nil, provider.Terminal(provider.InvalidConfiguration, "server type %q does not exist", c.ServerType)
	}
	name := c.Image
	if name == "" {
		if name, err = imageForOS(c.OperatingSystem); err != nil {
			return nil, provider.Terminal(provider.InvalidConfiguration, "%v", err)
		}
	}
	img, err := api.Image(ctx, name, st.Architecture)
	if err != nil {
		return nil, classify(err, "failed to get image")
	}
	if img == nil {
		return nil, provider.Terminal(provider.InvalidConfiguration, "image %q does not exist for architecture %s", name, st.Architecture)
	}
	r.serverType, r.image = st, img
	for _, name := range c.Networks {
		n, err := api.Network(ctx, name)
		if err != nil {
			return nil, classify(err, "failed to get network")
		}
		if n == nil {
			return nil, provider.Terminal(provider.InvalidConfiguration, "network %q does not exist", name)
		}
		r.networks = append(r.networks, n.ID)
	}
	for _, name := range c.Firewalls {
		f, err := api.Firewall(ctx, name)
		if err != nil {
			return nil, classify(err, "failed to get firewall")
		}
		if f == nil {
			return nil, provider.Terminal(provider.InvalidConfiguration, "firewall %q does not exist", name)
		}
		r.firewalls = append(r.firewalls, f.ID)
	}
	return r, nil
}
