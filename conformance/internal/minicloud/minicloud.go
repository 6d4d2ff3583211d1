// Package minicloud is a tiny instance API used to test the conformance
// suite itself: the reference provider in conformance/testdata/refcloud
// and its deliberately broken variants talk to it. It keeps instances in
// memory and behaves like a small cloud: bearer-token auth, unique names,
// lookups by name or machine UID.
//
//	GET    /v1/instances?uid=U | ?name=N  -> 200 {"instances": [...]}
//	POST   /v1/instances {"name","uid","size"} -> 201 {"instance": {...}}, 409 if the name is taken
//	GET    /v1/instances/{id}             -> 200 {"instance": {...}}, 404 if missing
//	PATCH  /v1/instances/{id} {"uid"}     -> 200 {"instance": {...}}
//	       ({"uid","keepOldUID":true} keeps the old UID finding it too, as
//	       a cloud's tags do when one is added and the old one not removed)
//	DELETE /v1/instances/{id}             -> 204, 404 if missing
package minicloud

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Instance is an instance of the mini cloud.
type Instance struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	UID    string `json:"uid"`
	Size   string `json:"size"`
	Status string `json:"status"`
	// OldUIDs still find the instance (see PATCH's keepOldUID).
	OldUIDs []string `json:"oldUIDs,omitempty"`
}

// Cloud is an http.Handler serving the API.
type Cloud struct {
	Token string
	// OnCreate, when set, is called after an instance was created (tests
	// stop a run there).
	OnCreate func()

	mu        sync.Mutex
	next      int
	instances map[string]*Instance
}

// New returns an empty cloud accepting token.
func New(token string) *Cloud { return &Cloud{Token: token, instances: map[string]*Instance{}} }

// Instances returns every instance, sorted by ID.
func (c *Cloud) Instances() []Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Instance, 0, len(c.instances))
	for _, i := range c.instances {
		out = append(out, *i)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	reply(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// ServeHTTP implements http.Handler.
func (c *Cloud) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+c.Token {
		apiError(w, http.StatusUnauthorized, "unauthorized", "invalid token")
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	path := strings.TrimPrefix(r.URL.Path, "/v1/instances")
	switch {
	case path == "" && r.Method == http.MethodGet:
		uid, name := r.URL.Query().Get("uid"), r.URL.Query().Get("name")
		list := []Instance{}
		for _, i := range c.instances {
			if (uid != "" && (i.UID == uid || slices.Contains(i.OldUIDs, uid))) || (name != "" && i.Name == name) {
				list = append(list, *i)
			}
		}
		sort.Slice(list, func(a, b int) bool { return list[a].ID < list[b].ID })
		reply(w, http.StatusOK, map[string]any{"instances": list})
	case path == "" && r.Method == http.MethodPost:
		var in Instance
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Name == "" {
			apiError(w, http.StatusBadRequest, "invalid_input", "name is required")
			return
		}
		for _, i := range c.instances {
			if i.Name == in.Name {
				apiError(w, http.StatusConflict, "uniqueness_error", "name is already used")
				return
			}
		}
		c.next++
		inst := &Instance{ID: fmt.Sprintf("i-%04d", c.next), Name: in.Name, UID: in.UID, Size: in.Size, Status: "running"}
		c.instances[inst.ID] = inst
		reply(w, http.StatusCreated, map[string]any{"instance": inst})
		if c.OnCreate != nil {
			c.OnCreate()
		}
	case strings.HasPrefix(path, "/"):
		inst, ok := c.instances[path[1:]]
		if !ok {
			apiError(w, http.StatusNotFound, "not_found", "no such instance")
			return
		}
		switch r.Method {
		case http.MethodGet:
			reply(w, http.StatusOK, map[string]any{"instance": inst})
		case http.MethodDelete:
			delete(c.instances, inst.ID)
			reply(w, http.StatusNoContent, nil)
		case http.MethodPatch:
			var in struct {
				UID        string `json:"uid"`
				KeepOldUID bool   `json:"keepOldUID"`
			}
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				apiError(w, http.StatusBadRequest, "invalid_input", err.Error())
				return
			}
			if in.KeepOldUID {
				inst.OldUIDs = append(inst.OldUIDs, inst.UID)
			}
			inst.UID = in.UID
			reply(w, http.StatusOK, map[string]any{"instance": inst})
		default:
			apiError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method)
		}
	default:
		apiError(w, http.StatusNotFound, "not_found", r.URL.Path)
	}
}
