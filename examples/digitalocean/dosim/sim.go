// Package dosim is an in-process simulator of the subset of the
// DigitalOcean API v2 that machine-controller's DigitalOcean provider
// uses: regions, sizes, images, SSH keys (/v2/account/keys), droplets
// (create, get, list by tag_name or name, delete) and tags (create, tag
// and untag resources).
//
// It follows the public API reference: the same paths and JSON shapes,
// bearer-token auth (401 "Unauthorized" otherwise), error objects
// {"id","message","request_id"} with DigitalOcean's status codes (404
// not_found, 422 unprocessable_entity, 429 too_many_requests, 500
// server_error), pagination by page and per_page (at most 200) with
// links.pages and meta.total, and the RateLimit-Limit, -Remaining and
// -Reset headers of the hourly budget (5,000 requests) plus the burst
// limit (250 a minute), whose 429 carries Retry-After. A droplet is "new"
// with no addresses in its create answer and "active" with its addresses
// once BootDuration has passed; with TagLag its tags, as upstream
// machine-controller observed, are applied only once it is active.
//
// Tests steer it with Inject (an error status before or after the real
// handler ran) and read its state with Droplets, SSHKeys, Tags and
// Requests. Start serves it on 127.0.0.1; cmd/dosim is a command around
// it.
package dosim

import (
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Options configure a Sim. Zero values take the defaults.
type Options struct {
	// Token is the API token clients must send as "Authorization:
	// Bearer". Default "sim-token".
	Token string
	// BootDuration is how long a new droplet stays "new" (without
	// addresses) before it is "active". Zero: active from the first read
	// after its create answer (which always says "new").
	BootDuration time.Duration
	// TagLag applies a new droplet's tags only once it is active: until
	// then its tags are empty and a tag_name listing does not find it.
	TagLag bool
	// HourlyLimit is the request budget per hour (default 5000); the
	// budget is renewed an hour after the first request of a window.
	HourlyLimit int
	// BurstLimit is the number of requests a minute (default 250).
	BurstLimit int
	// MaxPerPage caps per_page (default 200, as DigitalOcean's): a test
	// sets it low to make a client follow links.pages.
	MaxPerPage int
	// BaseURL is the API's URL in pagination links (default
	// https://api.digitalocean.com, as the real API writes them; clients
	// read only the page from them).
	BaseURL string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Sim is the simulated API. It is an http.Handler; mount it at the root,
// the API lives under /v2.
type Sim struct {
	opts Options
	mux  *http.ServeMux

	mu       sync.Mutex
	nextID   int
	nextIP   int
	droplets map[int]*droplet
	keys     map[int]*sshKey
	tags     map[string]bool
	faults   []*Fault
	requests []Request
	rate     rateState
}

// New returns a simulator seeded with a catalogue of DigitalOcean's public
// regions, sizes and distribution images (catalogue.go).
func New(opts Options) *Sim {
	if opts.Token == "" {
		opts.Token = "sim-token"
	}
	if opts.HourlyLimit <= 0 {
		opts.HourlyLimit = 5000
	}
	if opts.BurstLimit <= 0 {
		opts.BurstLimit = 250
	}
	if opts.MaxPerPage <= 0 {
		opts.MaxPerPage = 200
	}
	if opts.BaseURL == "" {
		opts.BaseURL = "https://api.digitalocean.com"
	}
	opts.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Sim{opts: opts, nextID: 3164444, droplets: map[int]*droplet{}, keys: map[int]*sshKey{}, tags: map[string]bool{}}
	s.routes()
	return s
}

// Token is the token the simulator accepts.
func (s *Sim) Token() string { return s.opts.Token }

func (s *Sim) id() int { s.nextID++; return s.nextID }

// Running is a Sim served on 127.0.0.1.
type Running struct {
	*Sim
	// URL is http://127.0.0.1:PORT, the API being under URL/v2.
	URL string
	srv *http.Server
	ln  net.Listener
}

// Start serves a new Sim on 127.0.0.1:port (0 picks a free port).
func Start(opts Options, port int) (*Running, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, err
	}
	s := New(opts)
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &Running{Sim: s, URL: "http://" + ln.Addr().String(), srv: srv, ln: ln}, nil
}

// Close stops serving.
func (r *Running) Close() error { return r.srv.Close() }

// DropletInfo is what a test sees of a droplet.
type DropletInfo struct {
	ID                int
	Name              string
	Region, Size      string
	Image             string
	Status            string
	Tags              []string
	UserData          string
	SSHKeys           []string // the fingerprints it was created with
	IPv6              bool
	PrivateNetworking bool
	Backups           bool
	Monitoring        bool
}

// Droplets lists the droplets, by ID, with their tags as applied (see
// Options.TagLag: a new droplet's pending tags are not shown).
func (s *Sim) Droplets() []DropletInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	out := make([]DropletInfo, 0, len(s.droplets))
	for _, d := range s.droplets {
		out = append(out, DropletInfo{ID: d.id, Name: d.name, Region: d.region, Size: d.size, Image: d.image.Slug,
			Status: s.status(d, now), Tags: s.visibleTags(d, now), UserData: d.userData,
			SSHKeys: append([]string(nil), d.sshKeys...), IPv6: d.ipv6, PrivateNetworking: d.privateNetworking,
			Backups: d.backups, Monitoring: d.monitoring})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// KeyInfo is what a test sees of an SSH key.
type KeyInfo struct {
	ID          int
	Name        string
	Fingerprint string
	PublicKey   string
}

// SSHKeys lists the account's SSH keys, by ID.
func (s *Sim) SSHKeys() []KeyInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]KeyInfo, 0, len(s.keys))
	for _, k := range s.keys {
		out = append(out, KeyInfo{ID: k.ID, Name: k.Name, Fingerprint: k.Fingerprint, PublicKey: k.PublicKey})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Tags lists the tags that exist, sorted. Tags outlive their resources,
// as DigitalOcean's do.
func (s *Sim) Tags() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.tags))
	for t := range s.tags {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Fault makes requests fail. The first fault whose Method and Path match a
// request applies to it.
type Fault struct {
	// Method matches the request's method; empty matches any.
	Method string
	// Path matches the request's path exactly, or as a prefix when it ends
	// in "/" or "*" ("/v2/droplets*" matches /v2/droplets and
	// /v2/droplets/1).
	Path string
	// Status is the error status answered, with DigitalOcean's error
	// object for it (404 not_found, 429 too_many_requests, 5xx
	// server_error, ...).
	Status int
	// RetryAfter, when positive, is sent as the Retry-After header (in
	// seconds).
	RetryAfter int
	// After runs the real handler first: the request takes effect, but
	// the client gets the fault's answer.
	After bool
	// Times is how many requests the fault applies to (default 1).
	Times int
}

// Inject adds a fault.
func (s *Sim) Inject(f Fault) {
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// takeFault returns the fault for r, spending one of its times.
func (s *Sim) takeFault(r *http.Request) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Method != "" && f.Method != r.Method {
			continue
		}
		prefix, isPrefix := strings.CutSuffix(f.Path, "*")
		if !isPrefix && strings.HasSuffix(f.Path, "/") {
			isPrefix = true
		}
		if (isPrefix && !strings.HasPrefix(r.URL.Path, prefix)) || (!isPrefix && r.URL.Path != f.Path) {
			continue
		}
		if f.Times--; f.Times <= 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		return f
	}
	return nil
}

// Request is one request the simulator answered, for tests to inspect.
type Request struct {
	Method string
	Path   string
	Query  string
	Status int
	// Faulted says an injected fault shaped the answer.
	Faulted bool
}

func (r Request) String() string {
	if r.Query != "" {
		return fmt.Sprintf("%s %s?%s %d", r.Method, r.Path, r.Query, r.Status)
	}
	return fmt.Sprintf("%s %s %d", r.Method, r.Path, r.Status)
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
