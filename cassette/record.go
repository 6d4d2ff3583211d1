package cassette

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/wasmprov/wasmprov/internal/hostalias"
)

// DefaultDropResponseHeaders are response headers not recorded because
// they change from one recording to the next and no provider should depend
// on them.
var DefaultDropResponseHeaders = []string{"Date", "X-Request-Id", "Age"}

// Recorder is an http.RoundTripper that sends requests on and records them
// with their responses. It is safe for concurrent use.
type Recorder struct {
	// Upstream sends the requests (default http.DefaultTransport).
	Upstream http.RoundTripper
	// Target, when set, redirects requests addressed to Canonical's scheme
	// and host to Target's scheme and host (the path is kept). The cassette
	// stores the canonical URL, so a provider configured with the canonical
	// endpoint replays the same requests whatever port a simulator listened
	// on while recording.
	Target, Canonical *url.URL
	// Aliases, when set, send requests for a host (the key: lower-case
	// "host:port", or "host" for a URL without a port, matched as the
	// runtime matches runtime.Policy's HostAliases) to another scheme and
	// host (the value, e.g.
	// http://127.0.0.1:8080) while the cassette stores the URL the
	// provider asked for: the runtime's policy host aliases
	// (runtime.Policy.HostAliases) done by the recorder, so that a
	// provider calling https://api.example.com records against a local
	// simulator and replays with no alias at all.
	Aliases map[string]*url.URL
	// Redact says what is secret.
	Redact Redaction
	// DropResponseHeaders are not recorded (nil means
	// DefaultDropResponseHeaders).
	DropResponseHeaders []string

	mu sync.Mutex
	c  Cassette
}

// RoundTrip implements http.RoundTripper.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	recorded := Request{
		Method: req.Method,
		URL:    r.Redact.URL(req.URL),
		Header: r.Redact.Header(req.Header),
		Body:   r.Redact.Body(body),
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	if to := r.route(req.URL); to != nil {
		u := *req.URL
		u.Scheme, u.Host = to.Scheme, to.Host
		out.URL = &u
		out.Host = u.Host
	}
	up := r.Upstream
	if up == nil {
		up = http.DefaultTransport
	}
	resp, err := up.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	rb, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	drop := r.DropResponseHeaders
	if drop == nil {
		drop = DefaultDropResponseHeaders
	}
	r.mu.Lock()
	r.c.Interactions = append(r.c.Interactions, Interaction{
		Scope:   ScopeFrom(req.Context()),
		Request: recorded,
		Response: Response{
			Status: resp.StatusCode,
			Header: r.Redact.Header(resp.Header, drop...),
			Body:   r.Redact.Body(rb),
		},
	})
	r.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	resp.ContentLength = int64(len(rb))
	return resp, nil
}

// route returns where a request for u goes instead (nil: to u): Target
// for the canonical URL, else u's host alias.
func (r *Recorder) route(u *url.URL) *url.URL {
	if r.Target != nil && r.Canonical != nil && u.Scheme == r.Canonical.Scheme && u.Host == r.Canonical.Host {
		return r.Target
	}
	return hostalias.Aliases(r.Aliases).Target(u)
}

// Cassette returns what was recorded so far.
func (r *Recorder) Cassette() *Cassette {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &Cassette{Version: Version, Interactions: append([]Interaction(nil), r.c.Interactions...)}
}

// Save writes what was recorded to path.
func (r *Recorder) Save(path string) error { return r.Cassette().Save(path) }
