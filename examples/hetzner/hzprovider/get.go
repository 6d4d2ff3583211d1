package hzprovider

import (
	"context"
	"net"
	"sort"
	"strconv"

	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// Get finds the Machine's server by the machine-uid label.
func (p *Provider) Get(ctx context.Context, m *provider.Machine) (*provider.Instance, error) {
	c, err := getConfig(ctx, m.Spec, true)
	if err != nil {
		return nil, err
	}
	api := p.api(c)
	s, err := findServer(ctx, api, m.UID)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, provider.ErrInstanceNotFound
	}
	inst := instance(s)
	for _, id := range s.FloatingIPs {
		ip, err := api.FloatingIP(ctx, id)
		if err != nil {
			return nil, classify(err, "failed to get floating ip")
		}
		if ip != "" {
			inst.Addresses[ip] = "ExternalIP"
		}
	}
	return inst, nil
}

// findServer returns the Machine's server, found by its UID label; with
// several (which Create never makes), the oldest.
func findServer(ctx context.Context, api API, uid string) (*Server, error) {
	servers, err := api.Servers(ctx, MachineUIDLabel+"=="+uid)
	if err != nil {
		return nil, classify(err, "failed to list servers")
	}
	var found []*Server
	for _, s := range servers {
		if s.Labels[MachineUIDLabel] == uid {
			found = append(found, s)
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	sort.Slice(found, func(i, j int) bool { return found[i].ID < found[j].ID })
	if len(found) > 1 {
		provider.Logger(ctx).Warn("several servers carry the machine's UID", "uid", uid, "count", len(found))
	}
	return found[0], nil
}

func instance(s *Server) *provider.Instance {
	addrs := map[string]string{}
	if s.PublicIPv4 != "" {
		addrs[s.PublicIPv4] = "ExternalIP"
	}
	if s.PublicIPv6 != "" {
		// The server's address is ::1 of its /64, as Hetzner configures it.
		if ip, _, err := net.ParseCIDR(s.PublicIPv6); err == nil && ip.To16() != nil {
			ip = ip.To16()
			ip[15] |= 1
			addrs[ip.String()] = "ExternalIP"
		}
	}
	for _, ip := range s.PrivateIPs {
		addrs[ip] = "InternalIP"
	}
	id := strconv.FormatInt(s.ID, 10)
	return &provider.Instance{Name: s.Name, ID: id, ProviderID: "hcloud://" + id, Addresses: addrs, Status: status(s.Status)}
}

func status(s string) provider.InstanceStatus {
	switch s {
	case "initializing", "starting":
		return provider.StatusCreating
	case "running":
		return provider.StatusRunning
	case "deleting":
		return provider.StatusDeleting
	}
	return provider.StatusUnknown
}

// MigrateUID relabels the Machine's server with the new UID. Servers made
// before labels were used are found by name, as upstream does.
func (p *Provider) MigrateUID(ctx context.Context, m *provider.Machine, newUID string) error {
	c, err := getConfig(ctx, m.Spec, true)
	if err != nil {
		return err
	}
	api := p.api(c)
	s, err := findServer(ctx, api, m.UID)
	if err != nil {
		return err
	}
	if s == nil {
		name := m.Spec.Name
		if name == "" {
			name = m.Name
		}
		if s, err = api.ServerByName(ctx, name); err != nil {
			return classify(err, "failed to get server")
		}
	}
	if s == nil {
		provider.Logger(ctx).Info("no server to migrate")
		return nil
	}
	labels := map[string]string{}
	for k, v := range s.Labels {
		labels[k] = v
	}
	labels[MachineUIDLabel] = newUID
	if err := api.SetServerLabels(ctx, s.ID, labels); err != nil {
		return classify(err, "failed to update UID label")
	}
	return nil
}
