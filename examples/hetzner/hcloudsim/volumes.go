package hcloudsim

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"
)

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

// Volumes returns the volumes that exist.
func (s *Sim) Volumes() []Volume {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(s.opts.Now())
	out := make([]Volume, 0, len(s.volumes))
	for _, v := range s.volumes {
		c := *v
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// AutoDetached lists volumes that were still attached when their server was
// deleted (the API detaches them itself). A provider that detaches first
// leaves this empty.
func (s *Sim) AutoDetached() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.autoDetach...)
}

// AddVolume creates a volume in location (attached to serverID when it is
// not 0) and returns its ID, as a CSI driver would have done through the
// API.
func (s *Sim) AddVolume(name, location string, sizeGB int, serverID int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	loc, ok := s.location(location)
	if !ok {
		return 0, fmt.Errorf("unknown location %q", location)
	}
	v := &Volume{ID: s.id(), Name: name, Location: loc, Size: sizeGB, Status: "available",
		Labels: map[string]string{}, Created: ts(s.opts.Now())}
	v.LinuxDevice = "/dev/disk/by-id/scsi-0HC_Volume_" + strconv.FormatInt(v.ID, 10)
	s.volumes[v.ID] = v
	if serverID != 0 {
		srv, ok := s.servers[serverID]
		if !ok {
			return 0, fmt.Errorf("no server %d", serverID)
		}
		v.Server = &serverID
		srv.Volumes = append(srv.Volumes, v.ID)
	}
	return v.ID, nil
}
