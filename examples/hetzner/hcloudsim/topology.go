package hcloudsim

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Placement groups, networks, firewalls and floating IPs: the resources a
// server can be created into or with. They follow the public API
// reference's shapes; tests and the demo create networks, firewalls and
// floating IPs with the Add* methods (a provider only looks them up), a
// provider creates and deletes placement groups itself.

// PlacementGroupLimit is how many servers a spread placement group holds,
// as Hetzner's.
const PlacementGroupLimit = 10

// PlacementGroup is a Hetzner placement group.
type PlacementGroup struct {
	ID      int64             `json:"id"`
	Name    string            `json:"name"`
	Labels  map[string]string `json:"labels"`
	Created string            `json:"created"`
	Servers []int64           `json:"servers"`
	Type    string            `json:"type"`
}

// Network is a Hetzner private network.
type Network struct {
	ID                    int64             `json:"id"`
	Name                  string            `json:"name"`
	Created               string            `json:"created"`
	IPRange               string            `json:"ip_range"`
	Subnets               []Subnet          `json:"subnets"`
	Routes                []any             `json:"routes"`
	Servers               []int64           `json:"servers"`
	LoadBalancers         []int64           `json:"load_balancers"`
	Protection            Protection        `json:"protection"`
	Labels                map[string]string `json:"labels"`
	ExposeRoutesToVSwitch bool              `json:"expose_routes_to_vswitch"`
	next                  int
}

// Subnet is a subnet of a network.
type Subnet struct {
	Type        string `json:"type"`
	IPRange     string `json:"ip_range"`
	NetworkZone string `json:"network_zone"`
	Gateway     string `json:"gateway"`
}

// FirewallResource is one entry of a firewall's applied_to.
type FirewallResource struct {
	Type   string `json:"type"`
	Server *struct {
		ID int64 `json:"id"`
	} `json:"server,omitempty"`
}

// Firewall is a Hetzner firewall.
type Firewall struct {
	ID        int64              `json:"id"`
	Name      string             `json:"name"`
	Labels    map[string]string  `json:"labels"`
	Created   string             `json:"created"`
	Rules     []any              `json:"rules"`
	AppliedTo []FirewallResource `json:"applied_to"`
}

// FloatingIP is a Hetzner floating IP.
type FloatingIP struct {
	ID           int64             `json:"id"`
	Name         string            `json:"name"`
	Description  *string           `json:"description"`
	Created      string            `json:"created"`
	IP           string            `json:"ip"`
	Type         string            `json:"type"`
	Server       *int64            `json:"server"`
	DNSPtr       []any             `json:"dns_ptr"`
	HomeLocation Location          `json:"home_location"`
	Blocked      bool              `json:"blocked"`
	Protection   Protection        `json:"protection"`
	Labels       map[string]string `json:"labels"`
}

// ServerFirewall is an entry of a server's public_net.firewalls.
type ServerFirewall struct {
	ID     int64  `json:"id"`
	Status string `json:"status"`
}

// AddNetwork creates a network with one cloud subnet in eu-central, as a
// person would have done before writing the Machine, and returns its ID.
// ipRange is a /16 such as "10.0.0.0/16"; servers get addresses from its
// first /24 from .2 on.
func (s *Sim) AddNetwork(name, ipRange string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	base, ok := strings.CutSuffix(ipRange, ".0.0/16")
	if !ok {
		return 0, fmt.Errorf("ip range %q is not an a.b.0.0/16", ipRange)
	}
	for _, n := range s.networks {
		if n.Name == name {
			return 0, fmt.Errorf("network %q exists", name)
		}
	}
	n := &Network{ID: s.id(), Name: name, Created: ts(s.opts.Now()), IPRange: ipRange,
		Subnets: []Subnet{{Type: "cloud", IPRange: base + ".0.0/24", NetworkZone: "eu-central", Gateway: base + ".0.1"}},
		Routes:  []any{}, Servers: []int64{}, LoadBalancers: []int64{}, Labels: map[string]string{}, next: 2}
	s.networks[n.ID] = n
	return n.ID, nil
}

// AddFirewall creates a firewall with no rules and returns its ID.
func (s *Sim) AddFirewall(name string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.firewalls {
		if f.Name == name {
			return 0, fmt.Errorf("firewall %q exists", name)
		}
	}
	f := &Firewall{ID: s.id(), Name: name, Labels: map[string]string{}, Created: ts(s.opts.Now()),
		Rules: []any{}, AppliedTo: []FirewallResource{}}
	s.firewalls[f.ID] = f
	return f.ID, nil
}

// AddFloatingIP creates an IPv4 floating IP in location fsn1, assigned to
// serverID unless it is 0, and returns its ID.
func (s *Sim) AddFloatingIP(serverID int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	loc, _ := s.location("fsn1")
	f := &FloatingIP{ID: s.id(), Created: ts(s.opts.Now()), Type: "ipv4", DNSPtr: []any{},
		HomeLocation: loc, Labels: map[string]string{}}
	f.Name = "floating-" + strconv.FormatInt(f.ID, 10)
	f.IP = fmt.Sprintf("198.51.100.%d", f.ID%250+1)
	if serverID != 0 {
		srv, ok := s.servers[serverID]
		if !ok {
			return 0, fmt.Errorf("no server %d", serverID)
		}
		f.Server = &serverID
		srv.PublicNet.FloatingIPs = append(srv.PublicNet.FloatingIPs, f.ID)
	}
	s.floatingIPs[f.ID] = f
	return f.ID, nil
}

// PlacementGroups returns the placement groups that exist, by ID.
func (s *Sim) PlacementGroups() []PlacementGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(s.opts.Now())
	out := make([]PlacementGroup, 0, len(s.placementGroups))
	for _, pg := range s.placementGroups {
		c := *pg
		c.Servers = append([]int64(nil), pg.Servers...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Networks returns the networks that exist, by ID.
func (s *Sim) Networks() []Network {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(s.opts.Now())
	out := make([]Network, 0, len(s.networks))
	for _, n := range s.networks {
		c := *n
		c.Servers = append([]int64(nil), n.Servers...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Firewalls returns the firewalls that exist, by ID.
func (s *Sim) Firewalls() []Firewall {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(s.opts.Now())
	out := make([]Firewall, 0, len(s.firewalls))
	for _, f := range s.firewalls {
		c := *f
		c.AppliedTo = append([]FirewallResource(nil), f.AppliedTo...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// attach puts a new server into its placement group, networks and
// firewalls, after placeable checked them. Called with s.mu held.
func (s *Sim) attach(srv *server, req *serverCreateRequest) {
	if req.PlacementGroup != 0 {
		pg := s.placementGroups[req.PlacementGroup]
		pg.Servers = append(pg.Servers, srv.ID)
		srv.PlacementGroup = pg
	}
	for _, id := range req.Networks {
		n := s.networks[id]
		n.Servers = append(n.Servers, srv.ID)
		ip := strings.TrimSuffix(n.Subnets[0].IPRange, "0/24") + strconv.Itoa(n.next)
		n.next++
		srv.PrivateNet = append(srv.PrivateNet, PrivateNet{Network: n.ID, IP: ip, AliasIPs: []string{},
			MACAddress: fmt.Sprintf("86:00:00:%02x:%02x:%02x", byte(srv.ID>>16), byte(srv.ID>>8), byte(srv.ID))})
	}
	for _, fw := range req.Firewalls {
		f := s.firewalls[fw.Firewall]
		r := FirewallResource{Type: "server", Server: &struct {
			ID int64 `json:"id"`
		}{srv.ID}}
		f.AppliedTo = append(f.AppliedTo, r)
		srv.PublicNet.Firewalls = append(srv.PublicNet.Firewalls, ServerFirewall{ID: f.ID, Status: "applied"})
	}
}

// placeable checks a create request's placement group, networks and
// firewalls, as the API does before it creates anything.
func (s *Sim) placeable(req *serverCreateRequest, v4, v6 bool) *apiError {
	if req.PlacementGroup != 0 {
		pg, ok := s.placementGroups[req.PlacementGroup]
		if !ok {
			return errf(400, "invalid_input", "invalid input in field 'placement_group': placement group %d not found", req.PlacementGroup)
		}
		if len(pg.Servers) >= PlacementGroupLimit {
			return errf(412, "placement_error", "placement group %d already holds %d servers", pg.ID, PlacementGroupLimit)
		}
	}
	seen := map[int64]bool{}
	for _, id := range req.Networks {
		if _, ok := s.networks[id]; !ok {
			return errf(400, "invalid_input", "invalid input in field 'networks': network %d not found", id)
		}
		if seen[id] {
			return errf(400, "invalid_input", "invalid input in field 'networks': network %d given twice", id)
		}
		seen[id] = true
	}
	for _, fw := range req.Firewalls {
		if _, ok := s.firewalls[fw.Firewall]; !ok {
			return errf(400, "invalid_input", "invalid input in field 'firewalls': firewall %d not found", fw.Firewall)
		}
	}
	if len(req.Firewalls) > 0 && !v4 && !v6 {
		return errf(422, "private_net_only_server", "a firewall cannot be applied to a server without a public interface")
	}
	if !v4 && !v6 && len(req.Networks) == 0 {
		return errf(400, "invalid_input", "a server without public IPs must be attached to a network")
	}
	return nil
}

// detach takes a deleted server out of its placement group, networks and
// firewalls, and unassigns its floating IPs (which stay). Called with s.mu
// held.
func (s *Sim) detach(srv *server) {
	if pg := srv.PlacementGroup; pg != nil {
		pg.Servers = remove(pg.Servers, srv.ID)
	}
	for _, p := range srv.PrivateNet {
		if n, ok := s.networks[p.Network]; ok {
			n.Servers = remove(n.Servers, srv.ID)
		}
	}
	for _, fw := range srv.PublicNet.Firewalls {
		if f, ok := s.firewalls[fw.ID]; ok {
			kept := f.AppliedTo[:0]
			for _, r := range f.AppliedTo {
				if r.Server == nil || r.Server.ID != srv.ID {
					kept = append(kept, r)
				}
			}
			f.AppliedTo = kept
		}
	}
	for _, id := range srv.PublicNet.FloatingIPs {
		if f, ok := s.floatingIPs[id]; ok {
			f.Server = nil
		}
	}
}

func (s *Sim) servePlacementGroups(r *http.Request, parts []string, now time.Time) (any, int, *apiError) {
	switch {
	case len(parts) == 1 && r.Method == http.MethodGet:
		q := r.URL.Query()
		sel, err := selectorFrom(q)
		if err != nil {
			return nil, 0, err
		}
		var items []any
		for _, pg := range sortedByID(s.placementGroups) {
			if (q.Has("name") && q.Get("name") != pg.Name) || !matchAny(q["type"], pg.Type) || !sel(pg.Labels) {
				continue
			}
			items = append(items, *pg)
		}
		res, err := paginate(q, "placement_groups", items)
		return res, 200, err
	case len(parts) == 1 && r.Method == http.MethodPost:
		var req struct {
			Name   string            `json:"name"`
			Type   string            `json:"type"`
			Labels map[string]string `json:"labels"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, 0, err
		}
		if req.Name == "" || len(req.Name) > 63 {
			return nil, 0, errf(400, "invalid_input", "invalid input in field 'name'")
		}
		if req.Type != "spread" {
			return nil, 0, errf(400, "invalid_input", "invalid input in field 'type': %q is not a placement group type", req.Type)
		}
		if err := validLabels(req.Labels); err != nil {
			return nil, 0, err
		}
		for _, pg := range s.placementGroups {
			if pg.Name == req.Name {
				return nil, 0, errf(409, "uniqueness_error", "placement group name is already used")
			}
		}
		pg := &PlacementGroup{ID: s.id(), Name: req.Name, Type: req.Type, Labels: copyMap(req.Labels),
			Created: ts(now), Servers: []int64{}}
		s.placementGroups[pg.ID] = pg
		return map[string]any{"placement_group": *pg, "action": nil}, http.StatusCreated, nil
	}
	if len(parts) != 2 {
		return nil, 0, errf(404, "not_found", "not found")
	}
	id, _ := strconv.ParseInt(parts[1], 10, 64)
	pg, ok := s.placementGroups[id]
	if !ok {
		return nil, 0, notFound("placement_group", parts[1])
	}
	switch r.Method {
	case http.MethodGet:
		return map[string]any{"placement_group": *pg}, 200, nil
	case http.MethodDelete:
		if len(pg.Servers) > 0 {
			return nil, 0, errf(422, "resource_in_use", "placement group %d still holds servers", pg.ID)
		}
		delete(s.placementGroups, id)
		return nil, http.StatusNoContent, nil
	}
	return nil, 0, errf(405, "method_not_allowed", "method not allowed")
}

// serveNamed serves the list-and-get endpoints of networks, firewalls and
// floating IPs, which a provider only reads.
func (s *Sim) serveNamed(r *http.Request, parts []string) (any, int, *apiError) {
	if r.Method != http.MethodGet {
		return nil, 0, errf(405, "method_not_allowed", "method not allowed")
	}
	kind := strings.TrimSuffix(parts[0], "s")
	type entry struct {
		id     int64
		name   string
		labels map[string]string
		v      any
	}
	var all []entry
	switch parts[0] {
	case "networks":
		for _, n := range sortedByID(s.networks) {
			all = append(all, entry{n.ID, n.Name, n.Labels, *n})
		}
	case "firewalls":
		for _, f := range sortedByID(s.firewalls) {
			all = append(all, entry{f.ID, f.Name, f.Labels, *f})
		}
	case "floating_ips":
		for _, f := range sortedByID(s.floatingIPs) {
			all = append(all, entry{f.ID, f.Name, f.Labels, *f})
		}
	}
	if len(parts) == 2 {
		for _, e := range all {
			if strconv.FormatInt(e.id, 10) == parts[1] {
				return map[string]any{kind: e.v}, 200, nil
			}
		}
		return nil, 0, notFound(kind, parts[1])
	}
	if len(parts) != 1 {
		return nil, 0, errf(404, "not_found", "not found")
	}
	q := r.URL.Query()
	sel, err := selectorFrom(q)
	if err != nil {
		return nil, 0, err
	}
	var items []any
	for _, e := range all {
		if (q.Has("name") && q.Get("name") != e.name) || !sel(e.labels) {
			continue
		}
		items = append(items, e.v)
	}
	res, err := paginate(q, parts[0], items)
	return res, 200, err
}

type identified interface {
	*PlacementGroup | *Network | *Firewall | *FloatingIP
}

func sortedByID[T identified](m map[int64]T) []T {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([]T, 0, len(ids))
	for _, id := range ids {
		out = append(out, m[id])
	}
	return out
}
