package hcloudsim

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"time"
)

var hostnameRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$`)

type serverCreateRequest struct {
	Name             string            `json:"name"`
	ServerType       any               `json:"server_type"`
	Image            any               `json:"image"`
	Location         any               `json:"location"`
	Datacenter       any               `json:"datacenter"`
	SSHKeys          []any             `json:"ssh_keys"`
	UserData         string            `json:"user_data"`
	Labels           map[string]string `json:"labels"`
	StartAfterCreate *bool             `json:"start_after_create"`
	Volumes          []int64           `json:"volumes"`
	Networks         []int64           `json:"networks"`
	Firewalls        []struct {
		Firewall int64 `json:"firewall"`
	} `json:"firewalls"`
	PlacementGroup int64 `json:"placement_group"`
	PublicNet      *struct {
		EnableIPv4 *bool `json:"enable_ipv4"`
		EnableIPv6 *bool `json:"enable_ipv6"`
	} `json:"public_net"`
}

func ref(v any) string {
	if v == nil {
		return ""
	}
	return idOrName(v)
}

// idOrName reads a JSON reference that may be a number or a string.
func idOrName(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatInt(int64(x), 10)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

func (s *Sim) serveServers(r *http.Request, parts []string, now time.Time) (any, int, *apiError) {
	switch {
	case len(parts) == 1 && r.Method == http.MethodGet:
		q := r.URL.Query()
		sel, err := selectorFrom(q)
		if err != nil {
			return nil, 0, err
		}
		var items []any
		for _, srv := range s.sortedServers() {
			if q.Has("name") && q.Get("name") != srv.Name {
				continue
			}
			if !matchAny(q["status"], srv.Status) || !sel(srv.Labels) || !s.read(srv, now) {
				continue
			}
			items = append(items, srv.Server)
		}
		res, err := paginate(q, "servers", items)
		return res, 200, err
	case len(parts) == 1 && r.Method == http.MethodPost:
		return s.createServer(r, now)
	case len(parts) == 3 && parts[1] == "actions" && r.Method == http.MethodGet:
		return s.actionByID(parts[2], now)
	}
	if len(parts) < 2 {
		return nil, 0, errf(405, "method_not_allowed", "method not allowed")
	}
	id, _ := strconv.ParseInt(parts[1], 10, 64)
	srv, ok := s.servers[id]
	if ok && len(parts) == 2 && r.Method == http.MethodGet {
		ok = s.read(srv, now)
	}
	if !ok {
		return nil, 0, notFound("server", parts[1])
	}
	switch {
	case len(parts) == 2 && r.Method == http.MethodGet:
		return map[string]any{"server": srv.Server}, 200, nil
	case len(parts) == 2 && r.Method == http.MethodPut:
		var req struct {
			Name   *string            `json:"name"`
			Labels *map[string]string `json:"labels"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, 0, err
		}
		if req.Labels != nil {
			if err := validLabels(*req.Labels); err != nil {
				return nil, 0, err
			}
			srv.Labels = copyMap(*req.Labels)
		}
		if req.Name != nil {
			if err := s.validName(*req.Name, srv.ID); err != nil {
				return nil, 0, err
			}
			srv.Name = *req.Name
		}
		return map[string]any{"server": srv.Server}, 200, nil
	case len(parts) == 2 && r.Method == http.MethodDelete:
		if srv.deleting {
			// Deleting twice is harmless: the deletion's action again.
			return map[string]any{"action": srv.deletion.render(now)}, 200, nil
		}
		srv.Status, srv.deleting = "deleting", true
		for _, vid := range srv.Volumes {
			if v, ok := s.volumes[vid]; ok {
				v.Server = nil
				s.autoDetach = append(s.autoDetach, vid)
			}
		}
		srv.Volumes = []int64{}
		a := s.newAction(now, "delete_server", []ActionResource{{srv.ID, "server"}}, nil)
		srv.deletion = a
		switch {
		case s.opts.DeleteReads > 0:
			// Done when the reads are spent, whatever the clock says.
			srv.byReads, srv.readsLeft = true, s.opts.DeleteReads
			a.done = now.Add(100 * 365 * 24 * time.Hour)
		case s.opts.DeleteDelay < 0:
			s.remove(srv, now)
		default:
			srv.deleteAt = now.Add(s.opts.DeleteDelay)
			a.done = srv.deleteAt
		}
		return map[string]any{"action": a.render(now)}, 200, nil
	}
	return nil, 0, errf(405, "method_not_allowed", "method not allowed")
}

func (s *Sim) sortedServers() []*server {
	out := make([]*server, 0, len(s.servers))
	for _, srv := range s.servers {
		out = append(out, srv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (s *Sim) validName(name string, self int64) *apiError {
	if !hostnameRE.MatchString(name) || len(name) > 63 {
		return errf(400, "invalid_input", "invalid input in field 'name': %q is not a valid hostname", name)
	}
	for _, o := range s.servers {
		if o.Name == name && o.ID != self {
			return errf(409, "uniqueness_error", "server name is already used")
		}
	}
	return nil
}

func validLabels(l map[string]string) *apiError {
	for k, v := range l {
		if k == "" || len(k) > 63 || len(v) > 63 {
			return errf(400, "invalid_input", "invalid input in field 'labels': label %q=%q is not valid", k, v)
		}
	}
	return nil
}

func (s *Sim) createServer(r *http.Request, now time.Time) (any, int, *apiError) {
	var body serverCreateRequest
	if err := decodeBody(r, &body); err != nil {
		return nil, 0, err
	}
	// server_type, image, location and datacenter take an ID or a name.
	req := struct {
		serverCreateRequest
		ServerType, Image, Location, Datacenter string
	}{serverCreateRequest: body}
	req.ServerType, req.Image, req.Location, req.Datacenter = ref(body.ServerType), ref(body.Image), ref(body.Location), ref(body.Datacenter)
	if req.Name == "" || req.ServerType == "" || req.Image == "" {
		return nil, 0, errf(400, "invalid_input", "invalid input: name, server_type and image are required")
	}
	if err := s.validName(req.Name, 0); err != nil {
		return nil, 0, err
	}
	if err := validLabels(req.Labels); err != nil {
		return nil, 0, err
	}
	if len(req.UserData) > 32<<10 {
		return nil, 0, errf(400, "invalid_input", "invalid input in field 'user_data': too long")
	}
	st, err := s.serverType(req.ServerType)
	if err != nil {
		return nil, 0, err
	}
	img, err := s.image(req.Image, st)
	if err != nil {
		return nil, 0, err
	}
	dc, err := s.datacenter(req.Location, req.Datacenter)
	if err != nil {
		return nil, 0, err
	}
	if err := s.sshKeysExist(req.SSHKeys); err != nil {
		return nil, 0, err
	}
	v4, v6 := req.publicNet()
	if err := s.placeable(&req.serverCreateRequest, v4, v6); err != nil {
		return nil, 0, err
	}
	srv := s.newServer(&req.serverCreateRequest, now, st, img, dc, v4, v6)
	s.attach(srv, &req.serverCreateRequest)
	s.servers[srv.ID] = srv
	res := []ActionResource{{srv.ID, "server"}}
	create := s.newAction(now, "create_server", res, nil)
	var next []Action
	if req.StartAfterCreate == nil || *req.StartAfterCreate {
		next = append(next, s.newAction(now, "start_server", res, nil).render(now))
	} else {
		srv.Status = "off"
	}
	if next == nil {
		next = []Action{}
	}
	return map[string]any{"server": srv.Server, "action": create.render(now), "next_actions": next,
		"root_password": nil}, http.StatusCreated, nil
}

// serverType resolves a create request's server_type, an ID or a name.
func (s *Sim) serverType(ref string) (*ServerType, *apiError) {
	var st *ServerType
	for i := range s.serverTypes {
		if t := &s.serverTypes[i]; t.Name == ref || strconv.FormatInt(t.ID, 10) == ref {
			st = t
		}
	}
	if st == nil {
		return nil, errf(400, "invalid_input", "invalid input in field 'server_type': server type %q not found", ref)
	}
	return st, nil
}

// image resolves a create request's image, an ID or a name of an image of
// the server type's architecture.
func (s *Sim) image(ref string, st *ServerType) (*Image, *apiError) {
	var img *Image
	for i := range s.images {
		im := &s.images[i]
		if strconv.FormatInt(im.ID, 10) == ref || (im.Name == ref && im.Architecture == st.Architecture) {
			img = im
		}
	}
	if img == nil {
		return nil, errf(400, "invalid_input", "invalid input in field 'image': image %q not found", ref)
	}
	if img.Architecture != st.Architecture {
		return nil, errf(400, "invalid_input", "image architecture %s does not match server type architecture %s", img.Architecture, st.Architecture)
	}
	return img, nil
}

// datacenter resolves a create request's location or datacenter (at most
// one of them); neither is the first datacenter.
func (s *Sim) datacenter(location, datacenter string) (Datacenter, *apiError) {
	if location != "" && datacenter != "" {
		return Datacenter{}, errf(400, "invalid_input", "location and datacenter are mutually exclusive")
	}
	dc := s.datacenters[0]
	switch {
	case datacenter != "":
		found := false
		for _, d := range s.datacenters {
			if d.Name == datacenter || strconv.FormatInt(d.ID, 10) == datacenter {
				dc, found = d, true
			}
		}
		if !found {
			return Datacenter{}, errf(400, "invalid_input", "invalid input in field 'datacenter': datacenter %q not found", datacenter)
		}
	case location != "":
		loc, ok := s.location(location)
		if !ok {
			return Datacenter{}, errf(400, "invalid_input", "invalid input in field 'location': location %q not found", location)
		}
		for _, d := range s.datacenters {
			if d.Location.ID == loc.ID {
				dc = d
			}
		}
	}
	return dc, nil
}

// sshKeysExist checks that a create request's ssh_keys, IDs or names,
// all exist.
func (s *Sim) sshKeysExist(keys []any) *apiError {
	for _, k := range keys {
		ref := idOrName(k)
		found := false
		for _, key := range s.sshKeys {
			if key.Name == ref || strconv.FormatInt(key.ID, 10) == ref {
				found = true
			}
		}
		if !found {
			return errf(400, "invalid_input", "invalid input in field 'ssh_keys': ssh key %q not found", ref)
		}
	}
	return nil
}

// publicNet reports whether the server gets a public IPv4 and IPv6; both
// by default.
func (req *serverCreateRequest) publicNet() (v4, v6 bool) {
	v4, v6 = true, true
	if req.PublicNet != nil {
		if req.PublicNet.EnableIPv4 != nil {
			v4 = *req.PublicNet.EnableIPv4
		}
		if req.PublicNet.EnableIPv6 != nil {
			v6 = *req.PublicNet.EnableIPv6
		}
	}
	return v4, v6
}

// newServer builds the server a valid create request asks for, booting
// from now on; it is not yet attached nor listed.
func (s *Sim) newServer(req *serverCreateRequest, now time.Time, st *ServerType, img *Image, dc Datacenter, v4, v6 bool) *server {
	srv := &server{userData: req.UserData, bootAt: now.Add(s.bootDuration())}
	srv.ID = s.id()
	srv.Name = req.Name
	srv.Status = "initializing"
	srv.Created = ts(now)
	srv.ServerType = *st
	srv.Datacenter = dc
	srv.Location = dc.Location
	imgCopy := *img
	srv.Image = &imgCopy
	srv.Labels = copyMap(req.Labels)
	srv.Volumes = []int64{}
	srv.LoadBalancers = []int64{}
	srv.PrivateNet = []PrivateNet{}
	srv.IncludedTraffic = 21990232555520
	srv.PrimaryDiskSize = st.Disk
	n := srv.ID % 250
	srv.PublicNet = PublicNet{FloatingIPs: []int64{}, Firewalls: []ServerFirewall{}}
	if v4 {
		srv.PublicNet.IPv4 = &PublicIPv4{ID: s.id(), IP: fmt.Sprintf("203.0.113.%d", n+1),
			DNSPtr: fmt.Sprintf("static.%d.113.0.203.clients.your-server.de", n+1)}
	}
	if v6 {
		srv.PublicNet.IPv6 = &PublicIPv6{ID: s.id(), IP: fmt.Sprintf("2001:db8:%x::/64", srv.ID), DNSPtr: []any{}}
	}
	return srv
}

// ServerInfo is a snapshot of a server for tests and the demo.
type ServerInfo struct {
	ID     int64
	Name   string
	Status string
	// ServerType is the name of the server's type (cx22, ...).
	ServerType string
	Labels     map[string]string
	Volumes    []int64
	// IPv4 is the public IPv4, empty for a server without one.
	IPv4 string
	// UserData is the user_data the server was created with.
	UserData string
	SSHKeys  int
	// PlacementGroup is the server's placement group, 0 for none.
	PlacementGroup int64
	// PrivateIPs are the server's addresses in its networks.
	PrivateIPs []string
	// Firewalls are the firewalls applied to the server.
	Firewalls   []int64
	FloatingIPs []int64
}

// Servers returns the servers that exist, by ID.
func (s *Sim) Servers() []ServerInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	s.advance(now)
	out := make([]ServerInfo, 0, len(s.servers))
	for _, srv := range s.servers {
		info := ServerInfo{
			ID: srv.ID, Name: srv.Name, Status: srv.Status, ServerType: srv.ServerType.Name, Labels: copyMap(srv.Labels),
			Volumes: append([]int64(nil), srv.Volumes...), UserData: srv.userData,
		}
		// A server created with enable_ipv4 false has none.
		if v4 := srv.PublicNet.IPv4; v4 != nil {
			info.IPv4 = v4.IP
		}
		if pg := srv.PlacementGroup; pg != nil {
			info.PlacementGroup = pg.ID
		}
		for _, p := range srv.PrivateNet {
			info.PrivateIPs = append(info.PrivateIPs, p.IP)
		}
		for _, f := range srv.PublicNet.Firewalls {
			info.Firewalls = append(info.Firewalls, f.ID)
		}
		info.FloatingIPs = append(info.FloatingIPs, srv.PublicNet.FloatingIPs...)
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
