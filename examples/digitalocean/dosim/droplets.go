package dosim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// droplet is a droplet as the simulator keeps it.
type droplet struct {
	id                int
	name              string
	region, size      string
	image             Image
	created           time.Time
	tags              []string
	userData          string
	sshKeys           []string
	ipv6              bool
	privateNetworking bool
	backups           bool
	monitoring        bool
	ipN               int
}

var (
	// hostname is what DigitalOcean accepts as a droplet name.
	hostname = regexp.MustCompile(`^[a-zA-Z0-9.-]{1,255}$`)
	// tagName is what DigitalOcean accepts as a tag name.
	tagName = regexp.MustCompile(`^[a-zA-Z0-9_:-]{1,255}$`)
)

const maxUserData = 64 << 10

// status is "new" until BootDuration has passed, then "active". Called
// with s.mu held.
func (s *Sim) status(d *droplet, now time.Time) string {
	if now.Before(d.created.Add(s.opts.BootDuration)) {
		return "new"
	}
	return "active"
}

// visibleTags are the tags applied to d: with TagLag, none while it is
// new. Called with s.mu held.
func (s *Sim) visibleTags(d *droplet, now time.Time) []string {
	if s.opts.TagLag && s.status(d, now) == "new" {
		return []string{}
	}
	return slices.Clone(d.tags)
}

// view is the droplet's JSON object; justCreated is the create answer,
// which always shows a new droplet without addresses.
func (s *Sim) view(d *droplet, now time.Time, justCreated bool) map[string]any {
	status := s.status(d, now)
	if justCreated {
		status = "new"
	}
	sz, _ := sizeBySlug(d.size)
	reg, _ := regionBySlug(d.region)
	nets := map[string]any{"v4": []any{}, "v6": []any{}}
	if status == "active" {
		n := d.ipN
		ranges := []string{"192.0.2.", "198.51.100.", "203.0.113."}
		v4 := []any{
			map[string]any{"ip_address": ranges[n/254%3] + strconv.Itoa(n%254+1), "netmask": "255.255.255.0",
				"gateway": ranges[n/254%3] + "254", "type": "public"},
			map[string]any{"ip_address": fmt.Sprintf("10.110.%d.%d", n/254%256, n%254+1), "netmask": "255.255.0.0",
				"gateway": "10.110.0.1", "type": "private"},
		}
		nets["v4"] = v4
		if d.ipv6 {
			nets["v6"] = []any{map[string]any{"ip_address": fmt.Sprintf("2001:db8:10:%x::1", n), "netmask": 64,
				"gateway": fmt.Sprintf("2001:db8:10:%x::ffff", n), "type": "public"}}
		}
	}
	tags := s.visibleTags(d, now)
	if justCreated && !s.opts.TagLag {
		tags = slices.Clone(d.tags)
	}
	features := []string{"droplet_agent", "private_networking"}
	if d.ipv6 {
		features = append(features, "ipv6")
	}
	if d.monitoring {
		features = append(features, "monitoring")
	}
	if d.backups {
		features = append(features, "backups")
	}
	return map[string]any{"id": d.id, "name": d.name, "memory": sz.Memory, "vcpus": sz.Vcpus, "disk": sz.Disk,
		"locked": false, "status": status, "kernel": nil, "created_at": d.created.UTC().Format(time.RFC3339),
		"features": features, "backup_ids": []int{}, "next_backup_window": nil, "snapshot_ids": []int{},
		"image": d.image, "volume_ids": []string{}, "size": sz, "size_slug": d.size, "networks": nets,
		"region": reg, "tags": tags, "vpc_uuid": "5a4981aa-9653-4bd1-bef5-d6bff52042e4"}
}

type createRequest struct {
	Name              string            `json:"name"`
	Region            string            `json:"region"`
	Size              string            `json:"size"`
	Image             json.RawMessage   `json:"image"`
	SSHKeys           []json.RawMessage `json:"ssh_keys"`
	Backups           bool              `json:"backups"`
	IPv6              bool              `json:"ipv6"`
	PrivateNetworking bool              `json:"private_networking"`
	Monitoring        bool              `json:"monitoring"`
	UserData          string            `json:"user_data"`
	Tags              []string          `json:"tags"`
}

// checkCreate validates a create request as DigitalOcean does, returning
// the image and the SSH keys' fingerprints. Called with s.mu held.
func (s *Sim) checkCreate(req *createRequest) (Image, []string, *apiError) {
	if !hostname.MatchString(req.Name) {
		return Image{}, nil, unprocessable("Only valid hostname characters are allowed. (a-z, A-Z, 0-9, . and -)")
	}
	if reg, ok := regionBySlug(req.Region); !ok || !reg.Available {
		return Image{}, nil, unprocessable("You specified an invalid region for Droplet creation.")
	}
	if sz, ok := sizeBySlug(req.Size); !ok || !sz.Available || !slices.Contains(sz.Regions, req.Region) {
		return Image{}, nil, unprocessable("You specified an invalid size for Droplet creation.")
	}
	// The image is a slug (a string) or an ID (a number).
	var ref any
	_ = json.Unmarshal(req.Image, &ref)
	var img Image
	ok := false
	switch v := ref.(type) {
	case string:
		img, ok = imageByRef(v)
		ok = ok && img.Slug == v
	case float64:
		img, ok = imageByRef(strconv.FormatFloat(v, 'f', -1, 64))
	}
	if !ok {
		return Image{}, nil, unprocessable("You specified an invalid image for Droplet creation.")
	}
	var fps []string
	for _, raw := range req.SSHKeys {
		k := s.keyByRef(strings.Trim(string(raw), `"`))
		if k == nil {
			return Image{}, nil, unprocessable("You specified an invalid ssh key (%s) for Droplet creation.", raw)
		}
		fps = append(fps, k.Fingerprint)
	}
	for _, t := range req.Tags {
		if !tagName.MatchString(t) {
			return Image{}, nil, unprocessable("tag names must only contain letters, numbers, colons, dashes and underscores (%q)", t)
		}
	}
	if len(req.UserData) > maxUserData {
		return Image{}, nil, unprocessable("user_data is limited to %d bytes", maxUserData)
	}
	return img, fps, nil
}

func (s *Sim) createDroplet(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if e := decodeBody(r, &req); e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	img, fps, e := s.checkCreate(&req)
	if e != nil {
		writeError(w, e)
		return
	}
	now := s.opts.Now()
	d := &droplet{id: s.id(), name: req.Name, region: req.Region, size: req.Size, image: img, created: now,
		userData: req.UserData, sshKeys: fps, ipv6: req.IPv6, privateNetworking: req.PrivateNetworking,
		backups: req.Backups, monitoring: req.Monitoring, ipN: s.nextIP}
	s.nextIP++
	for _, t := range req.Tags {
		if !slices.Contains(d.tags, t) {
			d.tags = append(d.tags, t)
		}
		s.tags[t] = true
	}
	s.droplets[d.id] = d
	action := s.id()
	writeJSON(w, http.StatusAccepted, map[string]any{"droplet": s.view(d, now, true), "links": map[string]any{
		"actions": []any{map[string]any{"id": action, "rel": "create", "href": s.opts.BaseURL + "/v2/actions/" + strconv.Itoa(action)}}}})
}

func (s *Sim) dropletByPath(r *http.Request) *droplet {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		return nil
	}
	return s.droplets[id]
}

func (s *Sim) getDroplet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dropletByPath(r)
	if d == nil {
		writeError(w, notFound())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"droplet": s.view(d, s.opts.Now(), false)})
}

// listDroplets lists droplets by ID, all of them or those with the tag
// tag_name (as applied: see Options.TagLag) or the name (exact, case
// insensitive), which cannot be combined.
func (s *Sim) listDroplets(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tag, name := q.Get("tag_name"), q.Get("name")
	if tag != "" && name != "" {
		writeError(w, unprocessable("name and tag_name cannot be combined"))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	var match []*droplet
	for _, d := range s.droplets {
		if (tag == "" || slices.Contains(s.visibleTags(d, now), tag)) && (name == "" || strings.EqualFold(d.name, name)) {
			match = append(match, d)
		}
	}
	sort.Slice(match, func(i, j int) bool { return match[i].id < match[j].id })
	p, e := s.paginate(r, len(match))
	if e != nil {
		writeError(w, e)
		return
	}
	list := make([]any, 0, p.to-p.from)
	for _, d := range match[p.from:p.to] {
		list = append(list, s.view(d, now, false))
	}
	writeJSON(w, http.StatusOK, map[string]any{"droplets": list, "links": p.links, "meta": p.meta})
}

func (s *Sim) deleteDroplet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dropletByPath(r)
	if d == nil {
		writeError(w, notFound())
		return
	}
	delete(s.droplets, d.id)
	w.WriteHeader(http.StatusNoContent)
}
