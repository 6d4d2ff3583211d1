package dosim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
)

// routes are the API paths the simulator serves, as documented.
func (s *Sim) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /v2/regions", s.listRegions)
	m.HandleFunc("GET /v2/sizes", s.listSizes)
	m.HandleFunc("GET /v2/images/{ref}", s.getImage)
	m.HandleFunc("GET /v2/account/keys", s.listKeys)
	m.HandleFunc("POST /v2/account/keys", s.createKey)
	m.HandleFunc("GET /v2/account/keys/{ref}", s.getKey)
	m.HandleFunc("DELETE /v2/account/keys/{ref}", s.deleteKey)
	m.HandleFunc("GET /v2/droplets", s.listDroplets)
	m.HandleFunc("POST /v2/droplets", s.createDroplet)
	m.HandleFunc("GET /v2/droplets/{id}", s.getDroplet)
	m.HandleFunc("DELETE /v2/droplets/{id}", s.deleteDroplet)
	m.HandleFunc("POST /v2/tags", s.createTag)
	m.HandleFunc("GET /v2/tags/{name}", s.getTag)
	m.HandleFunc("POST /v2/tags/{name}/resources", s.tagResources)
	m.HandleFunc("DELETE /v2/tags/{name}/resources", s.untagResources)
	m.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { writeError(w, notFound()) })
	s.mux = m
}

// ServeHTTP implements http.Handler.
func (s *Sim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	f := s.takeFault(r)
	if f != nil && !f.After {
		// Answered in place of the API, with its rate headers (unspent).
		s.mu.Lock()
		s.rateHeaders(rec.header)
		s.mu.Unlock()
		faultResponse(rec, f)
	} else {
		s.serveAPI(rec, r)
		if f != nil {
			rec.reset()
			faultResponse(rec, f)
		}
	}
	s.record(r, rec.status, f != nil)
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(rec.body)
}

func (s *Sim) record(r *http.Request, status int, faulted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) >= 10000 {
		s.requests = s.requests[1:]
	}
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Status: status, Faulted: faulted})
}

// serveAPI authenticates, spends the rate budget and routes.
func (s *Sim) serveAPI(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token != s.opts.Token {
		writeError(w, &apiError{http.StatusUnauthorized, "Unauthorized", "Unable to authenticate you"})
		return
	}
	s.mu.Lock()
	retry, ok := s.rateLimit(w.Header(), s.opts.Now())
	s.mu.Unlock()
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		writeError(w, &apiError{http.StatusTooManyRequests, "too_many_requests", "API Rate limit exceeded."})
		return
	}
	s.mux.ServeHTTP(w, r)
}

// recorder holds an answer until the fault, if any, has had its say.
type recorder struct {
	header http.Header
	status int
	body   []byte
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) { r.status = status }

func (r *recorder) Write(b []byte) (int, error) { r.body = append(r.body, b...); return len(b), nil }

// reset forgets the answer but its rate-limit headers.
func (r *recorder) reset() {
	keep := http.Header{}
	for k, v := range r.header {
		if strings.HasPrefix(k, "Ratelimit-") {
			keep[k] = v
		}
	}
	r.header, r.status, r.body = keep, http.StatusOK, nil
}

func faultResponse(w http.ResponseWriter, f *Fault) {
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	writeError(w, errorFor(f.Status))
}

// apiError is DigitalOcean's error object with its status.
type apiError struct {
	status      int
	id, message string
}

// requestSeq numbers the error answers' request_id.
var requestSeq atomic.Int64

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, map[string]string{"id": e.id, "message": e.message,
		"request_id": fmt.Sprintf("dosim-%08d", requestSeq.Add(1))})
}

// errorFor is DigitalOcean's error object for a status.
func errorFor(status int) *apiError {
	switch {
	case status == http.StatusBadRequest:
		return &apiError{status, "bad_request", "The request could not be understood."}
	case status == http.StatusUnauthorized:
		return &apiError{status, "Unauthorized", "Unable to authenticate you"}
	case status == http.StatusForbidden:
		return &apiError{status, "forbidden", "You do not have access for the attempted action."}
	case status == http.StatusNotFound:
		return notFound()
	case status == http.StatusUnprocessableEntity:
		return &apiError{status, "unprocessable_entity", "The request could not be processed."}
	case status == http.StatusTooManyRequests:
		return &apiError{status, "too_many_requests", "API Rate limit exceeded."}
	case status == http.StatusServiceUnavailable:
		return &apiError{status, "service_unavailable", "Service is currently unavailable."}
	case status >= 500:
		return &apiError{status, "server_error", "Unexpected server-side error"}
	}
	return &apiError{status, "error", http.StatusText(status)}
}

func notFound() *apiError {
	return &apiError{http.StatusNotFound, "not_found", "The resource you were accessing could not be found."}
}

func unprocessable(format string, args ...any) *apiError {
	return &apiError{http.StatusUnprocessableEntity, "unprocessable_entity", fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the simulator's own types always marshal
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// decodeBody decodes a JSON request body into v.
func decodeBody(r *http.Request, v any) *apiError {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return &apiError{http.StatusBadRequest, "bad_request", "unable to parse request body: " + err.Error()}
	}
	return nil
}

// page is one page of a listing: the slice bounds of the items, and the
// links and meta objects of the answer.
type page struct {
	from, to int
	links    map[string]any
	meta     map[string]int
}

// paginate reads page and per_page (default 20, at most MaxPerPage) and builds
// links.pages as DigitalOcean does: first and prev from the second page
// on, next and last before the last page, none for a single page.
func (s *Sim) paginate(r *http.Request, total int) (page, *apiError) {
	q := r.URL.Query()
	per, num := min(20, s.opts.MaxPerPage), 1
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return page{}, &apiError{http.StatusBadRequest, "bad_request", "per_page must be a positive integer"}
		}
		per = min(n, s.opts.MaxPerPage)
	}
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return page{}, &apiError{http.StatusBadRequest, "bad_request", "page must be a positive integer"}
		}
		num = n
	}
	last := max((total+per-1)/per, 1)
	link := func(n int) string {
		v := url.Values{}
		for k, vs := range q {
			v[k] = vs
		}
		v.Set("page", strconv.Itoa(n))
		v.Set("per_page", strconv.Itoa(per))
		return s.opts.BaseURL + r.URL.Path + "?" + v.Encode()
	}
	pages := map[string]string{}
	if num > 1 {
		pages["first"], pages["prev"] = link(1), link(min(num-1, last))
	}
	if num < last {
		pages["next"], pages["last"] = link(num+1), link(last)
	}
	p := page{from: min((num-1)*per, total), links: map[string]any{}, meta: map[string]int{"total": total}}
	p.to = min(p.from+per, total)
	if len(pages) > 0 {
		p.links["pages"] = pages
	}
	return p, nil
}
