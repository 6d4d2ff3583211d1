package hcloudsim

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ServeHTTP implements http.Handler.
func (s *Sim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_sim/") {
		s.serveControl(w, r)
		return
	}
	rec := &recorder{header: http.Header{}, status: 200}
	d := s.decide()
	served := d.latency <= 0 || delay(r, d.latency)
	s.hostile.delayed(d, served)
	if !served {
		return
	}
	if d.limited {
		for k, v := range d.header {
			rec.header[k] = v
		}
		writeError(rec, errf(429, "rate_limit_exceeded", "limit of %g requests per second reached", s.opts.RequestsPerSecond))
		s.record(r, rec.status, FaultRequestsPerSecond)
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body)
		return
	}
	// An ErrorRate or DropRate roll takes the injected faults' path, before
	// the handler.
	f := d.fault
	if f == nil {
		f = s.takeFault(r)
	}
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

type recorder struct {
	header http.Header
	status int
	body   []byte
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) { r.status = status }

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

func decodeBody(r *http.Request, v any) *apiError {
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		return errf(400, "json_error", "invalid JSON in request body: %v", err)
	}
	return nil
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

func selectorFrom(q map[string][]string) (func(map[string]string) bool, *apiError) {
	sel := first(q["label_selector"])
	m, err := parseSelector(sel)
	if err != nil {
		return nil, errf(400, "invalid_input", "invalid input in field 'label_selector': %v", err)
	}
	return m, nil
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
