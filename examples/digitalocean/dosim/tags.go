package dosim

import (
	"net/http"
	"slices"
	"strconv"
)

// tagView is a tag's JSON object with its droplet count. Called with s.mu
// held.
func (s *Sim) tagView(name string) map[string]any {
	n := 0
	now := s.opts.Now()
	for _, d := range s.droplets {
		if slices.Contains(s.visibleTags(d, now), name) {
			n++
		}
	}
	return map[string]any{"name": name, "resources": map[string]any{"count": n, "droplets": map[string]any{"count": n},
		"images": map[string]any{"count": 0}, "volumes": map[string]any{"count": 0},
		"volume_snapshots": map[string]any{"count": 0}, "databases": map[string]any{"count": 0}}}
}

// createTag creates a tag; creating one that exists answers 201 too, as
// DigitalOcean does.
func (s *Sim) createTag(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"name"`
	}
	if e := decodeBody(r, &req); e != nil {
		writeError(w, e)
		return
	}
	if !tagName.MatchString(req.Name) {
		writeError(w, unprocessable("tag names must only contain letters, numbers, colons, dashes and underscores"))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tags[req.Name] = true
	writeJSON(w, http.StatusCreated, map[string]any{"tag": s.tagView(req.Name)})
}

func (s *Sim) getTag(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := r.PathValue("name")
	if !s.tags[name] {
		writeError(w, notFound())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tag": s.tagView(name)})
}

type resourcesRequest struct {
	Resources []struct {
		ID   string `json:"resource_id"`
		Type string `json:"resource_type"`
	} `json:"resources"`
}

// resources reads a tag/untag request and finds its droplets; the tag
// must exist, and every resource must be an existing droplet. Called
// with s.mu held.
func (s *Sim) resources(r *http.Request, req *resourcesRequest) ([]*droplet, *apiError) {
	if !s.tags[r.PathValue("name")] {
		return nil, notFound()
	}
	if len(req.Resources) == 0 {
		return nil, unprocessable("resources must not be empty")
	}
	var out []*droplet
	for _, res := range req.Resources {
		if res.Type != "droplet" {
			return nil, unprocessable("resource type %q is not supported by this simulator", res.Type)
		}
		id, err := strconv.Atoi(res.ID)
		d := s.droplets[id]
		if err != nil || d == nil {
			return nil, notFound()
		}
		out = append(out, d)
	}
	return out, nil
}

func (s *Sim) tagResources(w http.ResponseWriter, r *http.Request) {
	s.retag(w, r, func(d *droplet, name string) {
		if !slices.Contains(d.tags, name) {
			d.tags = append(d.tags, name)
		}
	})
}

func (s *Sim) untagResources(w http.ResponseWriter, r *http.Request) {
	s.retag(w, r, func(d *droplet, name string) {
		d.tags = slices.DeleteFunc(d.tags, func(t string) bool { return t == name })
	})
}

// retag applies change to the tag in the path on every resource the body
// names, or answers the error that names none.
func (s *Sim) retag(w http.ResponseWriter, r *http.Request, change func(d *droplet, name string)) {
	var req resourcesRequest
	if e := decodeBody(r, &req); e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ds, e := s.resources(r, &req)
	if e != nil {
		writeError(w, e)
		return
	}
	for _, d := range ds {
		change(d, r.PathValue("name"))
	}
	w.WriteHeader(http.StatusNoContent)
}
