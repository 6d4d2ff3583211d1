// Package hcloudsim is an in-process simulator of the subset of the Hetzner
// Cloud API that a machine-controller provider uses: servers, server types,
// locations, datacenters, images, SSH keys, volumes, actions, placement
// groups, networks, firewalls and floating IPs.
//
// It follows the public API reference: the same paths and JSON shapes,
// error objects ({"error":{"code","message","details"}}), label selectors,
// pagination (page/per_page and meta.pagination), bearer-token auth, the
// RateLimit-* headers with 429 rate_limit_exceeded when the budget is spent,
// and actions whose status moves from running to success over time, as a
// server moves from initializing to running. Deletion is asynchronous, as
// Hetzner's: DELETE /servers/{id} answers a running action and the server
// stays listed as "deleting" for a while (DeleteDelay, or a number of reads
// with DeleteReads) before it disappears.
//
// Tests steer it with Inject (latency, 5xx, 429, garbage or truncated
// bodies, dropped connections, before or after the real handler ran) and
// read its state with Servers, Volumes, SSHKeys and Requests. Start
// serves it on 127.0.0.1, and cmd/hcloudsim is a command around it.
package hcloudsim

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configure a Sim. Zero values take the defaults.
type Options struct {
	// Token is the API token clients must send as "Authorization: Bearer".
	// Default "sim-token".
	Token string
	// ReadOnlyTokens are accepted for GET requests and answered with 403
	// token_readonly for anything else, like a read-only API token.
	ReadOnlyTokens []string
	// ActionDuration is how long an action stays "running" (default 200ms).
	ActionDuration time.Duration
	// BootDuration is how long a new server stays "initializing" (default
	// 500ms).
	BootDuration time.Duration
	// DeleteDelay is how long a deleted server stays listed with status
	// "deleting" before it disappears, and its delete_server action
	// "running" (default ActionDuration). Negative: it disappears with the
	// DELETE answer, whose action has succeeded already.
	DeleteDelay time.Duration
	// DeleteReads, when positive, replaces DeleteDelay by a count that
	// does not depend on the clock: a deleted server is in the answers of
	// DeleteReads reads (GET /servers listings and GET /servers/{id} that
	// would show it) as "deleting", and gone from the next one on. Tests
	// use it to see a provider's Delete find the server deleting on a
	// given call.
	DeleteReads int
	// RateLimit is the request budget per hour (default 3600, as Hetzner's
	// default project limit); the budget refills evenly over the hour.
	RateLimit int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Sim is the simulated API. It is an http.Handler; mount it at the root,
// the API lives under /v1.
type Sim struct {
	opts Options

	mu          sync.Mutex
	nextID      int64
	locations   []Location
	datacenters []Datacenter
	serverTypes []ServerType
	images      []Image
	servers     map[int64]*server
	sshKeys     map[int64]*SSHKey
	volumes     map[int64]*Volume
	// placementGroups, networks, firewalls and floatingIPs: topology.go.
	placementGroups map[int64]*PlacementGroup
	networks        map[int64]*Network
	firewalls       map[int64]*Firewall
	floatingIPs     map[int64]*FloatingIP
	actions         map[int64]*action
	faults          []*faultEntry
	requests        []Request
	stuck           map[string]bool
	autoDetach      []int64
	remaining       float64
	lastRefill      time.Time
	maxRequests     int
}

type server struct {
	Server
	userData string
	bootAt   time.Time
	// deleting is set by DELETE; the server then disappears at deleteAt
	// or, counting reads (Options.DeleteReads), once readsLeft is spent.
	deleting  bool
	byReads   bool
	deleteAt  time.Time
	readsLeft int
	// deletion is the DELETE's action, which succeeds when the server is
	// gone.
	deletion *action
}

type action struct {
	Action
	start time.Time
	done  time.Time
	onEnd func()
}

// Request is one request the simulator answered, for tests to inspect.
type Request struct {
	Method string
	Path   string
	Query  string
	Status int
	// Fault names the injected fault that shaped the answer, if any.
	Fault string
	Time  time.Time
}

// New returns a simulator seeded with Hetzner's public catalogue: locations
// fsn1, nbg1, hel1, ash, hil, sin; their datacenters; shared and dedicated
// server types; and system images for x86 and arm.
func New(opts Options) *Sim {
	if opts.Token == "" {
		opts.Token = "sim-token"
	}
	if opts.ActionDuration <= 0 {
		opts.ActionDuration = 200 * time.Millisecond
	}
	if opts.BootDuration <= 0 {
		opts.BootDuration = 500 * time.Millisecond
	}
	if opts.DeleteDelay == 0 {
		opts.DeleteDelay = opts.ActionDuration
	}
	if opts.RateLimit <= 0 {
		opts.RateLimit = 3600
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Sim{
		opts:            opts,
		nextID:          1000,
		servers:         map[int64]*server{},
		sshKeys:         map[int64]*SSHKey{},
		volumes:         map[int64]*Volume{},
		placementGroups: map[int64]*PlacementGroup{},
		networks:        map[int64]*Network{},
		firewalls:       map[int64]*Firewall{},
		floatingIPs:     map[int64]*FloatingIP{},
		actions:         map[int64]*action{},
		stuck:           map[string]bool{},
		remaining:       float64(opts.RateLimit),
		lastRefill:      opts.Now(),
		maxRequests:     10000,
	}
	s.seed()
	return s
}

// Token is the token the simulator accepts.
func (s *Sim) Token() string { return s.opts.Token }

func (s *Sim) id() int64 { s.nextID++; return s.nextID }

func (s *Sim) seed() {
	created := ts(time.Date(2024, 4, 25, 0, 0, 0, 0, time.UTC))
	locs := []Location{
		{1, "fsn1", "Falkenstein DC Park 1", "DE", "Falkenstein", 50.47612, 12.370071, "eu-central"},
		{2, "nbg1", "Nuremberg DC Park 1", "DE", "Nuremberg", 49.452102, 11.076665, "eu-central"},
		{3, "hel1", "Helsinki DC Park 1", "FI", "Helsinki", 60.169855, 24.938379, "eu-central"},
		{4, "ash", "Ashburn, VA", "US", "Ashburn, VA", 39.045821, -77.487073, "us-east"},
		{5, "hil", "Hillsboro, OR", "US", "Hillsboro, OR", 45.54222, -122.951924, "us-west"},
		{6, "sin", "Singapore", "SG", "Singapore", 1.283333, 103.833333, "ap-southeast"},
	}
	s.locations = locs
	s.serverTypes = []ServerType{
		{ID: 22, Name: "cpx11", Description: "CPX 11", Cores: 2, Memory: 2, Disk: 40, StorageType: "local", CPUType: "shared", Architecture: "x86"},
		{ID: 104, Name: "cx22", Description: "CX22", Cores: 2, Memory: 4, Disk: 40, StorageType: "local", CPUType: "shared", Architecture: "x86"},
		{ID: 105, Name: "cx32", Description: "CX32", Cores: 4, Memory: 8, Disk: 80, StorageType: "local", CPUType: "shared", Architecture: "x86"},
		{ID: 45, Name: "cax11", Description: "CAX11", Cores: 2, Memory: 4, Disk: 40, StorageType: "local", CPUType: "shared", Architecture: "arm"},
		{ID: 96, Name: "ccx13", Description: "CCX13 Dedicated CPU", Cores: 2, Memory: 8, Disk: 80, StorageType: "local", CPUType: "dedicated", Architecture: "x86"},
	}
	for i := range s.serverTypes {
		s.serverTypes[i].Prices = []any{}
	}
	var all []int64
	for _, t := range s.serverTypes {
		all = append(all, t.ID)
	}
	dcs := []string{"fsn1-dc14", "nbg1-dc3", "hel1-dc2", "ash-dc1", "hil-dc1", "sin-dc1"}
	for i, name := range dcs {
		dc := Datacenter{ID: int64(i + 1), Name: name, Description: locs[i].City + " DC", Location: locs[i]}
		dc.ServerTypes.Supported, dc.ServerTypes.Available, dc.ServerTypes.AvailableForMigration = all, all, all
		s.datacenters = append(s.datacenters, dc)
	}
	var id int64 = 160000000
	for _, img := range []struct{ name, flavor, version, desc string }{
		{"ubuntu-22.04", "ubuntu", "22.04", "Ubuntu 22.04"},
		{"ubuntu-24.04", "ubuntu", "24.04", "Ubuntu 24.04"},
		{"rocky-8", "rocky", "8", "Rocky Linux 8"},
		{"rocky-9", "rocky", "9", "Rocky Linux 9"},
		{"debian-12", "debian", "12", "Debian 12"},
		{"flatcar", "unknown", "", "Flatcar Container Linux"},
	} {
		for _, arch := range []string{"x86", "arm"} {
			id++
			v := img.version
			var ver *string
			if v != "" {
				ver = &v
			}
			s.images = append(s.images, Image{
				ID: id, Type: "system", Status: "available", Name: img.name, Description: img.desc,
				DiskSize: 5, Created: created, OSFlavor: img.flavor, OSVersion: ver, RapidDeploy: true,
				Labels: map[string]string{}, Architecture: arch,
			})
		}
	}
}

// StickInitializing keeps servers named name in "initializing" for good
// (or releases them when stuck is false), to simulate a server that never
// finishes booting.
func (s *Sim) StickInitializing(name string, stuck bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stuck[name] = stuck
}

// ServerInfo is a snapshot of a server for tests and the demo.
type ServerInfo struct {
	ID      int64
	Name    string
	Status  string
	Labels  map[string]string
	Volumes []int64
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
			ID: srv.ID, Name: srv.Name, Status: srv.Status, Labels: copyMap(srv.Labels),
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

// Requests returns the requests answered so far, oldest first.
func (s *Sim) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ResetRequests forgets the recorded requests.
func (s *Sim) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// SetRateLimitRemaining sets the remaining request budget, e.g. to 0 to get
// 429s until it refills.
func (s *Sim) SetRateLimitRemaining(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remaining = float64(n)
	s.lastRefill = s.opts.Now()
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// advance moves time-driven state forward: finished actions, booted and
// deleted servers. Called with s.mu held.
func (s *Sim) advance(now time.Time) {
	for _, a := range s.actions {
		if a.Status == "running" && !now.Before(a.done) {
			a.finish(a.done)
		}
	}
	for _, srv := range s.servers {
		if srv.deleting {
			if !srv.byReads && !now.Before(srv.deleteAt) {
				s.remove(srv, srv.deleteAt)
			}
			continue
		}
		if srv.Status == "initializing" && !now.Before(srv.bootAt) && !s.stuck[srv.Name] {
			srv.Status = "running"
		}
	}
}

// finish makes a running action succeed at time at.
func (a *action) finish(at time.Time) {
	if a.Status != "running" {
		return
	}
	a.Status, a.Progress = "success", 100
	f := ts(at)
	a.Finished = &f
	if a.onEnd != nil {
		a.onEnd()
		a.onEnd = nil
	}
}

// remove makes a deleting server disappear at time at, and its delete
// action succeed. Called with s.mu held.
func (s *Sim) remove(srv *server, at time.Time) {
	delete(s.servers, srv.ID)
	s.detach(srv)
	if srv.deletion != nil {
		srv.deletion.done = at
		srv.deletion.finish(at)
	}
}

// read counts one API read of srv and reports whether srv is still there
// to be shown: a server deleting by reads (Options.DeleteReads) vanishes
// once its reads are spent. Called with s.mu held.
func (s *Sim) read(srv *server, now time.Time) bool {
	if !srv.deleting || !srv.byReads {
		return true
	}
	if srv.readsLeft <= 0 {
		s.remove(srv, now)
		return false
	}
	srv.readsLeft--
	return true
}

func (s *Sim) newAction(now time.Time, command string, res []ActionResource, onEnd func()) *action {
	a := &action{Action: Action{ID: s.id(), Command: command, Status: "running", Started: ts(now), Resources: res},
		start: now, done: now.Add(s.opts.ActionDuration), onEnd: onEnd}
	s.actions[a.ID] = a
	return a
}

func (a *action) render(now time.Time) Action {
	out := a.Action
	if out.Status == "running" {
		total := a.done.Sub(a.start)
		if total > 0 {
			out.Progress = int(100 * now.Sub(a.start) / total)
		}
		if out.Progress > 99 {
			out.Progress = 99
		}
	}
	if out.Resources == nil {
		out.Resources = []ActionResource{}
	}
	return out
}

func (s *Sim) location(nameOrID string) (Location, bool) {
	for _, l := range s.locations {
		if l.Name == nameOrID || strconv.FormatInt(l.ID, 10) == nameOrID {
			return l, true
		}
	}
	return Location{}, false
}

// ---- HTTP ----

type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errf(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func notFound(kind string, id string) *apiError {
	return errf(http.StatusNotFound, "not_found", "%s with ID '%s' not found", kind, id)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	b, err := json.Marshal(v)
	if err != nil {
		status, b = 500, []byte(`{"error":{"code":"server_error","message":"encoding failed","details":{}}}`)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, map[string]any{"error": map[string]any{
		"code": e.code, "message": e.message, "details": map[string]any{},
	}})
}

// ServeHTTP implements http.Handler.
func (s *Sim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_sim/") {
		s.serveControl(w, r)
		return
	}
	rec := &recorder{header: http.Header{}, status: 200}
	f := s.takeFault(r)
	fault := ""
	if f != nil {
		fault = f.Name
		if f.Latency > 0 {
			select {
			case <-time.After(f.Latency):
			case <-r.Context().Done():
				return
			}
		}
	}
	if f != nil && !f.After && (f.Status != 0 || f.Body != "" || f.Drop) {
		s.faultResponse(rec, f)
	} else {
		s.serveAPI(rec, r)
		if f != nil && f.After {
			if f.Status != 0 || f.Body != "" {
				rec.reset()
				s.faultResponse(rec, f)
			}
		}
	}
	s.record(r, rec.status, fault)
	if f != nil && f.Drop {
		drop(w)
		return
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	body := rec.body
	if f != nil && f.Truncate {
		// Promise the whole body, send half, close: the client sees an
		// unexpected EOF.
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.status)
		_, _ = w.Write(body[:len(body)/2])
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		drop(w)
		return
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(body)
}

func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func (s *Sim) record(r *http.Request, status int, fault string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) >= s.maxRequests {
		s.requests = s.requests[1:]
	}
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Status: status, Fault: fault, Time: s.opts.Now()})
}

type recorder struct {
	header http.Header
	status int
	body   []byte
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(status int)      { r.status = status }
func (r *recorder) Write(b []byte) (int, error) { r.body = append(r.body, b...); return len(b), nil }
func (r *recorder) reset() {
	keep := http.Header{}
	for k, v := range r.header {
		if strings.HasPrefix(k, "Ratelimit-") {
			keep[k] = v
		}
	}
	r.header, r.status, r.body = keep, 200, nil
}

// rateLimit spends one request of the budget and sets the RateLimit-*
// headers; it reports false when the budget is spent. Called with s.mu held.
func (s *Sim) rateLimit(w http.ResponseWriter, now time.Time) bool {
	limit := float64(s.opts.RateLimit)
	perSecond := limit / 3600
	s.remaining += now.Sub(s.lastRefill).Seconds() * perSecond
	if s.remaining > limit {
		s.remaining = limit
	}
	s.lastRefill = now
	ok := s.remaining >= 1
	if ok {
		s.remaining--
	}
	s.setRateHeaders(w, now)
	return ok
}

func (s *Sim) setRateHeaders(w http.ResponseWriter, now time.Time) {
	limit := float64(s.opts.RateLimit)
	untilFull := time.Duration((limit - s.remaining) / (limit / 3600) * float64(time.Second))
	h := w.Header()
	h.Set("RateLimit-Limit", strconv.Itoa(s.opts.RateLimit))
	h.Set("RateLimit-Remaining", strconv.Itoa(int(s.remaining)))
	h.Set("RateLimit-Reset", strconv.FormatInt(now.Add(untilFull).Unix(), 10))
}

func (s *Sim) serveAPI(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.Path, "/v1/")
	if !ok {
		writeError(w, errf(404, "not_found", "not found"))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	s.advance(now)
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	readOnly := false
	for _, t := range s.opts.ReadOnlyTokens {
		if token == t {
			readOnly = true
		}
	}
	if token != s.opts.Token && !readOnly {
		writeError(w, errf(401, "unauthorized", "unable to authenticate"))
		return
	}
	if !s.rateLimit(w, now) {
		writeError(w, errf(429, "rate_limit_exceeded", "limit of %d requests per hour reached", s.opts.RateLimit))
		return
	}
	if readOnly && r.Method != http.MethodGet {
		writeError(w, errf(403, "token_readonly", "the token is read-only"))
		return
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var res any
	status := http.StatusOK
	var err *apiError
	switch parts[0] {
	case "locations":
		res, err = s.catalogue(r, parts, "location", len(s.locations), func(i int) (int64, string, any) {
			return s.locations[i].ID, s.locations[i].Name, s.locations[i]
		}, nil)
	case "datacenters":
		res, err = s.catalogue(r, parts, "datacenter", len(s.datacenters), func(i int) (int64, string, any) {
			return s.datacenters[i].ID, s.datacenters[i].Name, s.datacenters[i]
		}, nil)
	case "server_types":
		res, err = s.catalogue(r, parts, "server_type", len(s.serverTypes), func(i int) (int64, string, any) {
			return s.serverTypes[i].ID, s.serverTypes[i].Name, s.serverTypes[i]
		}, nil)
	case "images":
		res, err = s.catalogue(r, parts, "image", len(s.images), func(i int) (int64, string, any) {
			return s.images[i].ID, s.images[i].Name, s.images[i]
		}, func(i int, q map[string][]string) bool {
			img := s.images[i]
			return matchAny(q["architecture"], img.Architecture) && matchAny(q["type"], img.Type) &&
				matchAny(q["status"], img.Status) && s.matchLabels(q, img.Labels)
		})
	case "servers":
		res, status, err = s.serveServers(r, parts, now)
	case "ssh_keys":
		res, status, err = s.serveSSHKeys(r, parts, now)
	case "volumes":
		res, status, err = s.serveVolumes(r, parts, now)
	case "actions":
		res, err = s.serveActions(r, parts, now)
	case "placement_groups":
		res, status, err = s.servePlacementGroups(r, parts, now)
	case "networks", "firewalls", "floating_ips":
		res, status, err = s.serveNamed(r, parts)
	default:
		err = errf(404, "not_found", "unknown path /v1/%s", path)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if res == nil {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, res)
}

func matchAny(want []string, have string) bool {
	if len(want) == 0 {
		return true
	}
	for _, w := range want {
		if w == have {
			return true
		}
	}
	return false
}

func (s *Sim) matchLabels(q map[string][]string, labels map[string]string) bool {
	sel := q["label_selector"]
	if len(sel) == 0 {
		return true
	}
	m, err := parseSelector(sel[0])
	if err != nil {
		return false
	}
	return m(labels)
}

// catalogue serves the read-only collections: list with name filter and
// pagination, or one by ID.
func (s *Sim) catalogue(r *http.Request, parts []string, kind string, n int, at func(int) (int64, string, any),
	filter func(int, map[string][]string) bool) (any, *apiError) {
	if r.Method != http.MethodGet {
		return nil, errf(405, "method_not_allowed", "method not allowed")
	}
	plural := kind + "s"
	if len(parts) == 2 {
		for i := 0; i < n; i++ {
			if id, _, v := at(i); strconv.FormatInt(id, 10) == parts[1] {
				return map[string]any{kind: v}, nil
			}
		}
		return nil, notFound(kind, parts[1])
	}
	if len(parts) != 1 {
		return nil, errf(404, "not_found", "not found")
	}
	q := r.URL.Query()
	if sel := q.Get("label_selector"); sel != "" {
		if _, err := parseSelector(sel); err != nil {
			return nil, errf(400, "invalid_input", "invalid label_selector: %v", err)
		}
	}
	var items []any
	for i := 0; i < n; i++ {
		_, name, v := at(i)
		if q.Has("name") && q.Get("name") != name {
			continue
		}
		if filter != nil && !filter(i, q) {
			continue
		}
		items = append(items, v)
	}
	return paginate(q, plural, items)
}

func paginate(q map[string][]string, plural string, items []any) (any, *apiError) {
	page, perPage := 1, 25
	if v := first(q["page"]); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 {
			return nil, errf(400, "invalid_input", "invalid page %q", v)
		}
		page = p
	}
	if v := first(q["per_page"]); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 50 {
			return nil, errf(400, "invalid_input", "per_page must be between 1 and 50")
		}
		perPage = p
	}
	total := len(items)
	last := (total + perPage - 1) / perPage
	if last == 0 {
		last = 1
	}
	lo, hi := (page-1)*perPage, page*perPage
	if lo > total {
		lo = total
	}
	if hi > total {
		hi = total
	}
	pg := Pagination{Page: page, PerPage: perPage, LastPage: last, TotalEntries: total}
	if page > 1 {
		p := page - 1
		pg.PreviousPage = &p
	}
	if page < last {
		p := page + 1
		pg.NextPage = &p
	}
	out := items[lo:hi]
	if out == nil {
		out = []any{}
	}
	return map[string]any{plural: out, "meta": map[string]any{"pagination": pg}}, nil
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func decodeBody(r *http.Request, v any) *apiError {
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		return errf(400, "json_error", "invalid JSON in request body: %v", err)
	}
	return nil
}
