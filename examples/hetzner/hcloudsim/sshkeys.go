package hcloudsim

import (
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

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

// SSHKeys returns the SSH keys that exist.
func (s *Sim) SSHKeys() []SSHKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SSHKey, 0, len(s.sshKeys))
	for _, k := range s.sshKeys {
		out = append(out, *k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
