package dosim

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// sshKey is an account SSH key, in the API's JSON shape.
type sshKey struct {
	ID          int    `json:"id"`
	Fingerprint string `json:"fingerprint"`
	PublicKey   string `json:"public_key"`
	Name        string `json:"name"`
}

var keyTypes = []string{"ssh-rsa", "ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521"}

// Fingerprint is DigitalOcean's fingerprint of an authorized_keys line:
// the MD5 of the key blob as colon-separated hex (OpenSSH's legacy MD5
// format), by which keys are also addressed in the API.
func Fingerprint(publicKey string) (string, error) {
	fields := strings.Fields(publicKey)
	if len(fields) < 2 {
		return "", fmt.Errorf("key should be of the format `type key [comment]`")
	}
	known := false
	for _, t := range keyTypes {
		known = known || fields[0] == t
	}
	if !known {
		return "", fmt.Errorf("unsupported key type %q", fields[0])
	}
	blob, err := base64.StdEncoding.DecodeString(fields[1])
	if err != nil {
		return "", fmt.Errorf("key data is not base64: %v", err)
	}
	if len(blob) < 4 {
		return "", fmt.Errorf("key data is too short")
	}
	n := binary.BigEndian.Uint32(blob)
	if uint64(n) > uint64(len(blob)-4) || !bytes.Equal(blob[4:4+n], []byte(fields[0])) {
		return "", fmt.Errorf("key data does not hold a %s key", fields[0])
	}
	sum := md5.Sum(blob)
	hex := make([]string, len(sum))
	for i, b := range sum {
		hex[i] = fmt.Sprintf("%02x", b)
	}
	return strings.Join(hex, ":"), nil
}

// keyByRef finds a key by ID or fingerprint. Called with s.mu held.
func (s *Sim) keyByRef(ref string) *sshKey {
	if id, err := strconv.Atoi(ref); err == nil {
		return s.keys[id]
	}
	for _, k := range s.keys {
		if k.Fingerprint == ref {
			return k
		}
	}
	return nil
}

func (s *Sim) listKeys(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := make([]sshKey, 0, len(s.keys))
	for _, k := range s.keys {
		all = append(all, *k)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	p, e := s.paginate(r, len(all))
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ssh_keys": all[p.from:p.to], "links": p.links, "meta": p.meta})
}

func (s *Sim) createKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name      string `json:"name"`
		PublicKey string `json:"public_key"`
	}
	if e := decodeBody(r, &req); e != nil {
		writeError(w, e)
		return
	}
	if strings.TrimSpace(req.Name) == "" {
		writeError(w, unprocessable("Name is required"))
		return
	}
	fp, err := Fingerprint(req.PublicKey)
	if err != nil {
		writeError(w, unprocessable("Key invalid, %v", err))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keyByRef(fp) != nil {
		writeError(w, unprocessable("SSH Key is already in use on your account"))
		return
	}
	k := &sshKey{ID: s.id(), Fingerprint: fp, PublicKey: strings.TrimSpace(req.PublicKey), Name: req.Name}
	s.keys[k.ID] = k
	writeJSON(w, http.StatusCreated, map[string]any{"ssh_key": k})
}

func (s *Sim) getKey(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keyByRef(r.PathValue("ref"))
	if k == nil {
		writeError(w, notFound())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ssh_key": k})
}

func (s *Sim) deleteKey(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keyByRef(r.PathValue("ref"))
	if k == nil {
		writeError(w, notFound())
		return
	}
	delete(s.keys, k.ID)
	w.WriteHeader(http.StatusNoContent)
}
