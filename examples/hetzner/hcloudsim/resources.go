package hcloudsim

import (
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
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
	var st *ServerType
	for i := range s.serverTypes {
		if t := &s.serverTypes[i]; t.Name == req.ServerType || strconv.FormatInt(t.ID, 10) == req.ServerType {
			st = t
		}
	}
	if st == nil {
		return nil, 0, errf(400, "invalid_input", "invalid input in field 'server_type': server type %q not found", req.ServerType)
	}
	var img *Image
	for i := range s.images {
		im := &s.images[i]
		if strconv.FormatInt(im.ID, 10) == req.Image || (im.Name == req.Image && im.Architecture == st.Architecture) {
			img = im
		}
	}
	if img == nil {
		return nil, 0, errf(400, "invalid_input", "invalid input in field 'image': image %q not found", req.Image)
	}
	if img.Architecture != st.Architecture {
		return nil, 0, errf(400, "invalid_input", "image architecture %s does not match server type architecture %s", img.Architecture, st.Architecture)
	}
	if req.Location != "" && req.Datacenter != "" {
		return nil, 0, errf(400, "invalid_input", "location and datacenter are mutually exclusive")
	}
	dc := s.datacenters[0]
	switch {
	case req.Datacenter != "":
		found := false
		for _, d := range s.datacenters {
			if d.Name == req.Datacenter || strconv.FormatInt(d.ID, 10) == req.Datacenter {
				dc, found = d, true
			}
		}
		if !found {
			return nil, 0, errf(400, "invalid_input", "invalid input in field 'datacenter': datacenter %q not found", req.Datacenter)
		}
	case req.Location != "":
		loc, ok := s.location(req.Location)
		if !ok {
			return nil, 0, errf(400, "invalid_input", "invalid input in field 'location': location %q not found", req.Location)
		}
		for _, d := range s.datacenters {
			if d.Location.ID == loc.ID {
				dc = d
			}
		}
	}
	for _, k := range req.SSHKeys {
		ref := idOrName(k)
		found := false
		for _, key := range s.sshKeys {
			if key.Name == ref || strconv.FormatInt(key.ID, 10) == ref {
				found = true
			}
		}
		if !found {
			return nil, 0, errf(400, "invalid_input", "invalid input in field 'ssh_keys': ssh key %q not found", ref)
		}
	}
	v4, v6 := true, true
	if req.PublicNet != nil {
		if req.PublicNet.EnableIPv4 != nil {
			v4 = *req.PublicNet.EnableIPv4
		}
		if req.PublicNet.EnableIPv6 != nil {
			v6 = *req.PublicNet.EnableIPv6
		}
	}
	if err := s.placeable(&req.serverCreateRequest, v4, v6); err != nil {
		return nil, 0, err
	}
	srv := &server{userData: req.UserData, bootAt: now.Add(s.opts.BootDuration)}
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

func (s *Sim) serveSSHKeys(r *http.Request, parts []string, now time.Time) (any, int, *apiError) {
	switch {
	case len(parts) == 1 && r.Method == http.MethodGet:
		q := r.URL.Query()
		sel, err := selectorFrom(q)
		if err != nil {
			return nil, 0, err
		}
		keys := make([]*SSHKey, 0, len(s.sshKeys))
		for _, k := range s.sshKeys {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i].ID < keys[j].ID })
		var items []any
		for _, k := range keys {
			if (q.Has("name") && q.Get("name") != k.Name) || (q.Has("fingerprint") && q.Get("fingerprint") != k.Fingerprint) || !sel(k.Labels) {
				continue
			}
			items = append(items, *k)
		}
		res, err := paginate(q, "ssh_keys", items)
		return res, 200, err
	case len(parts) == 1 && r.Method == http.MethodPost:
		var req struct {
			Name      string            `json:"name"`
			PublicKey string            `json:"public_key"`
			Labels    map[string]string `json:"labels"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, 0, err
		}
		if req.Name == "" {
			return nil, 0, errf(400, "invalid_input", "invalid input in field 'name'")
		}
		fp, ok := fingerprint(req.PublicKey)
		if !ok {
			return nil, 0, errf(400, "invalid_input", "invalid input in field 'public_key': not a valid SSH public key")
		}
		for _, k := range s.sshKeys {
			if k.Name == req.Name {
				return nil, 0, errf(409, "uniqueness_error", "SSH key with the same name already exists")
			}
			if k.Fingerprint == fp {
				return nil, 0, errf(409, "uniqueness_error", "SSH key with the same fingerprint already exists")
			}
		}
		if req.Labels == nil {
			req.Labels = map[string]string{}
		}
		k := &SSHKey{ID: s.id(), Name: req.Name, Fingerprint: fp, PublicKey: req.PublicKey, Labels: req.Labels, Created: ts(now)}
		s.sshKeys[k.ID] = k
		return map[string]any{"ssh_key": *k}, http.StatusCreated, nil
	}
	if len(parts) != 2 {
		return nil, 0, errf(404, "not_found", "not found")
	}
	id, _ := strconv.ParseInt(parts[1], 10, 64)
	k, ok := s.sshKeys[id]
	if !ok {
		return nil, 0, notFound("ssh_key", parts[1])
	}
	switch r.Method {
	case http.MethodGet:
		return map[string]any{"ssh_key": *k}, 200, nil
	case http.MethodDelete:
		delete(s.sshKeys, id)
		return nil, http.StatusNoContent, nil
	}
	return nil, 0, errf(405, "method_not_allowed", "method not allowed")
}

// fingerprint is the MD5 fingerprint of an OpenSSH public key, as Hetzner
// shows it.
func fingerprint(pub string) (string, bool) {
	f := strings.Fields(pub)
	if len(f) < 2 || !strings.HasPrefix(f[0], "ssh-") && !strings.HasPrefix(f[0], "ecdsa-") {
		return "", false
	}
	raw, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil || len(raw) < 4+len(f[0]) || string(raw[4:4+len(f[0])]) != f[0] {
		return "", false
	}
	sum := md5.Sum(raw)
	hexs := make([]string, len(sum))
	for i, b := range sum {
		hexs[i] = fmt.Sprintf("%02x", b)
	}
	return strings.Join(hexs, ":"), true
}

func (s *Sim) serveVolumes(r *http.Request, parts []string, now time.Time) (any, int, *apiError) {
	switch {
	case len(parts) == 1 && r.Method == http.MethodGet:
		q := r.URL.Query()
		sel, err := selectorFrom(q)
		if err != nil {
			return nil, 0, err
		}
		vols := make([]*Volume, 0, len(s.volumes))
		for _, v := range s.volumes {
			vols = append(vols, v)
		}
		sort.Slice(vols, func(i, j int) bool { return vols[i].ID < vols[j].ID })
		var items []any
		for _, v := range vols {
			if (q.Has("name") && q.Get("name") != v.Name) || !matchAny(q["status"], v.Status) || !sel(v.Labels) {
				continue
			}
			items = append(items, *v)
		}
		res, err := paginate(q, "volumes", items)
		return res, 200, err
	case len(parts) == 3 && parts[1] == "actions" && r.Method == http.MethodGet:
		return s.actionByID(parts[2], now)
	}
	if len(parts) < 2 {
		return nil, 0, errf(405, "method_not_allowed", "method not allowed")
	}
	id, _ := strconv.ParseInt(parts[1], 10, 64)
	v, ok := s.volumes[id]
	if !ok {
		return nil, 0, notFound("volume", parts[1])
	}
	res := []ActionResource{{v.ID, "volume"}}
	switch {
	case len(parts) == 2 && r.Method == http.MethodGet:
		return map[string]any{"volume": *v}, 200, nil
	case len(parts) == 2 && r.Method == http.MethodDelete:
		if v.Server != nil {
			return nil, 0, errf(423, "locked", "volume is attached to a server")
		}
		delete(s.volumes, id)
		return nil, http.StatusNoContent, nil
	case len(parts) == 4 && parts[2] == "actions" && parts[3] == "detach" && r.Method == http.MethodPost:
		if v.Server == nil {
			return nil, 0, errf(400, "invalid_input", "volume %d is not attached", v.ID)
		}
		if srv, ok := s.servers[*v.Server]; ok {
			res = append(res, ActionResource{srv.ID, "server"})
		}
		sid := *v.Server
		a := s.newAction(now, "detach_volume", res, func() {
			v.Server = nil
			if srv, ok := s.servers[sid]; ok {
				srv.Volumes = remove(srv.Volumes, v.ID)
			}
		})
		return map[string]any{"action": a.render(now)}, http.StatusCreated, nil
	case len(parts) == 4 && parts[2] == "actions" && parts[3] == "attach" && r.Method == http.MethodPost:
		var req struct {
			Server any `json:"server"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, 0, err
		}
		sid, _ := strconv.ParseInt(idOrName(req.Server), 10, 64)
		srv, ok := s.servers[sid]
		if !ok {
			return nil, 0, errf(400, "invalid_input", "invalid input in field 'server'")
		}
		if v.Server != nil {
			return nil, 0, errf(409, "conflict", "volume is already attached")
		}
		v.Server = &sid
		srv.Volumes = append(srv.Volumes, v.ID)
		a := s.newAction(now, "attach_volume", append(res, ActionResource{sid, "server"}), nil)
		return map[string]any{"action": a.render(now)}, http.StatusCreated, nil
	}
	return nil, 0, errf(405, "method_not_allowed", "method not allowed")
}

func remove(ids []int64, id int64) []int64 {
	out := ids[:0]
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

func (s *Sim) actionByID(idStr string, now time.Time) (any, int, *apiError) {
	id, _ := strconv.ParseInt(idStr, 10, 64)
	a, ok := s.actions[id]
	if !ok {
		return nil, 0, notFound("action", idStr)
	}
	return map[string]any{"action": a.render(now)}, 200, nil
}

func (s *Sim) serveActions(r *http.Request, parts []string, now time.Time) (any, *apiError) {
	if r.Method != http.MethodGet {
		return nil, errf(405, "method_not_allowed", "method not allowed")
	}
	if len(parts) == 2 {
		res, _, err := s.actionByID(parts[1], now)
		return res, err
	}
	q := r.URL.Query()
	ids := map[string]bool{}
	for _, id := range q["id"] {
		ids[id] = true
	}
	acts := make([]*action, 0, len(s.actions))
	for _, a := range s.actions {
		if len(ids) > 0 && !ids[strconv.FormatInt(a.ID, 10)] {
			continue
		}
		if !matchAny(q["status"], a.Status) {
			continue
		}
		acts = append(acts, a)
	}
	sort.Slice(acts, func(i, j int) bool { return acts[i].ID < acts[j].ID })
	items := make([]any, 0, len(acts))
	for _, a := range acts {
		items = append(items, a.render(now))
	}
	return paginate(q, "actions", items)
}

func selectorFrom(q map[string][]string) (func(map[string]string) bool, *apiError) {
	sel := first(q["label_selector"])
	m, err := parseSelector(sel)
	if err != nil {
		return nil, errf(400, "invalid_input", "invalid input in field 'label_selector': %v", err)
	}
	return m, nil
}
