package hcloudsim

import (
	"net/http"
	"time"
)

// Request is one request the simulator answered, for tests to inspect.
type Request struct {
	Method string
	Path   string
	Query  string
	Status int
	// Fault names the injected fault that shaped the answer, if any, or
	// the hostile option: FaultRequestsPerSecond, FaultErrorRate,
	// FaultDropRate.
	Fault string
	Time  time.Time
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
