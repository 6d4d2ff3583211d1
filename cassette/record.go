package cassette

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"sync"
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
	if r.Target != nil && r.Canonical != nil && req.URL.Scheme == r.Canonical.Scheme && req.URL.Host == r.Canonical.Host {
		u := *req.URL
		u.Scheme, u.Host = r.Target.Scheme, r.Target.Host
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

// Cassette returns what was recorded so far.
func (r *Recorder) Cassette() *Cassette {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &Cassette{Version: Version, Interactions: append([]Interaction(nil), r.c.Interactions...)}
}

// Save writes what was recorded to path.
func (r *Recorder) Save(path string) error { return r.Cassette().Save(path) }
