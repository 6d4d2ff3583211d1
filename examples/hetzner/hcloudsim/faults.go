package hcloudsim

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Fault changes how the simulator answers matching requests. Faults are
// matched in the order they were injected; the first match applies.
type Fault struct {
	// Name labels the fault in Requests.
	Name string `json:"name,omitempty"`
	// Method matches the request method ("" any).
	Method string `json:"method,omitempty"`
	// Path matches the request path: exact, or a prefix when it ends in
	// "*" ("/v1/servers*"). "" matches any API path.
	Path string `json:"path,omitempty"`
	// Times is how many requests the fault applies to (0: until removed).
	Times int `json:"times,omitempty"`

	// Latency delays the answer.
	Latency time.Duration `json:"latency,omitempty"`
	// Status answers with this status and a Hetzner error object fitting
	// it (500 server_error, 503 unavailable, 429 rate_limit_exceeded, ...).
	Status int `json:"status,omitempty"`
	// Body replaces the answer's body (e.g. garbage that is not JSON),
	// with Status or 200.
	Body string `json:"body,omitempty"`
	// Header adds response headers (e.g. Retry-After).
	Header map[string]string `json:"header,omitempty"`
	// Truncate sends only half of the body and closes the connection.
	Truncate bool `json:"truncate,omitempty"`
	// Drop closes the connection without an answer.
	Drop bool `json:"drop,omitempty"`
	// After lets the real handler run first (the request takes effect),
	// then applies Status/Body/Truncate/Drop to the answer: a server that is
	// created although the client never learns it.
	After bool `json:"after,omitempty"`
}

type faultEntry struct {
	Fault
	left atomic.Int64
	hits atomic.Int64
}

// Injected is a handle on an injected fault.
type Injected struct {
	s *Sim
	e *faultEntry
}

// Hits is how many requests the fault has shaped.
func (i *Injected) Hits() int { return int(i.e.hits.Load()) }

// Remove stops the fault.
func (i *Injected) Remove() {
	i.s.mu.Lock()
	defer i.s.mu.Unlock()
	for n, e := range i.s.faults {
		if e == i.e {
			i.s.faults = append(i.s.faults[:n], i.s.faults[n+1:]...)
			return
		}
	}
}

// Inject adds a fault and returns its handle.
func (s *Sim) Inject(f Fault) *Injected {
	e := &faultEntry{Fault: f}
	e.left.Store(int64(f.Times))
	s.mu.Lock()
	s.faults = append(s.faults, e)
	s.mu.Unlock()
	return &Injected{s: s, e: e}
}

// ClearFaults removes every fault.
func (s *Sim) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

func (f *Fault) matches(r *http.Request) bool {
	if f.Method != "" && !strings.EqualFold(f.Method, r.Method) {
		return false
	}
	switch {
	case f.Path == "":
		return true
	case strings.HasSuffix(f.Path, "*"):
		return strings.HasPrefix(r.URL.Path, strings.TrimSuffix(f.Path, "*"))
	}
	return r.URL.Path == f.Path
}

func (s *Sim) takeFault(r *http.Request) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range s.faults {
		if !e.matches(r) {
			continue
		}
		if e.Times > 0 {
			if e.left.Add(-1) <= 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
		}
		e.hits.Add(1)
		f := e.Fault
		return &f
	}
	return nil
}

var statusCodes = map[int]string{
	400: "invalid_input", 401: "unauthorized", 403: "forbidden", 404: "not_found", 409: "conflict",
	412: "resource_unavailable", 423: "locked", 429: "rate_limit_exceeded", 500: "server_error",
	502: "bad_gateway", 503: "unavailable", 504: "timeout",
}

func (s *Sim) faultResponse(w http.ResponseWriter, f *Fault) {
	for k, v := range f.Header {
		w.Header().Set(k, v)
	}
	status := f.Status
	if status == 0 {
		status = 200
	}
	if status == 429 {
		s.mu.Lock()
		s.setRateHeaders(w, s.opts.Now())
		s.mu.Unlock()
	}
	if f.Body != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(f.Body))
		return
	}
	if f.Drop && f.Status == 0 {
		return
	}
	code, ok := statusCodes[status]
	if !ok {
		code = "server_error"
	}
	writeError(w, errf(status, code, "injected fault %q", f.Name))
}

// serveControl is the simulator's own API, for tools driving a simulator
// in another process: GET /_sim/state, GET /_sim/stats (RequestStats),
// POST /_sim/faults (a Fault), DELETE /_sim/faults.
func (s *Sim) serveControl(w http.ResponseWriter, r *http.Request) {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if token != s.opts.Token {
		writeError(w, errf(401, "unauthorized", "unable to authenticate"))
		return
	}
	switch {
	case r.URL.Path == "/_sim/state" && r.Method == http.MethodGet:
		writeJSON(w, 200, map[string]any{"servers": s.Servers(), "ssh_keys": s.SSHKeys(), "volumes": s.Volumes()})
	case r.URL.Path == "/_sim/faults" && r.Method == http.MethodPost:
		var f Fault
		if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
			writeError(w, errf(400, "json_error", "%v", err))
			return
		}
		s.Inject(f)
		writeJSON(w, 201, map[string]any{"fault": f})
	case r.URL.Path == "/_sim/stats" && r.Method == http.MethodGet:
		writeJSON(w, 200, s.RequestStats())
	case r.URL.Path == "/_sim/faults" && r.Method == http.MethodDelete:
		s.ClearFaults()
		w.WriteHeader(204)
	default:
		writeError(w, errf(404, "not_found", "not found"))
	}
}

// Running is a simulator listening on 127.0.0.1.
type Running struct {
	*Sim
	// URL is the API's base URL, e.g. "http://127.0.0.1:41234/v1".
	URL string
	// Addr is host:port.
	Addr string
	srv  *http.Server
	ln   net.Listener
}

// Start serves a new simulator on 127.0.0.1:port (0 picks a free port).
func Start(opts Options, port int) (*Running, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", itoa(port)))
	if err != nil {
		return nil, err
	}
	sim := New(opts)
	hs := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	addr := ln.Addr().String()
	return &Running{Sim: sim, URL: "http://" + addr + "/v1", Addr: addr, srv: hs, ln: ln}, nil
}

// Close stops the server.
func (s *Running) Close() error { return s.srv.Close() }

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
