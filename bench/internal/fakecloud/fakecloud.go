// Package fakecloud is the loopback cloud API the Create benchmarks call:
// three small Hetzner-shaped endpoints answering immediately.
package fakecloud

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
)

// Server is a running fake cloud API.
type Server struct {
	*httptest.Server
	Requests atomic.Int64
}

// Start serves the fake API on 127.0.0.1.
func Start() *Server {
	s := &Server{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /server_types", func(w http.ResponseWriter, r *http.Request) {
		s.Requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"server_types":[{"id":22,"name":"` + r.URL.Query().Get("name") + `","cores":4,"memory":8.0,"disk":80,"architecture":"x86"}]}`))
	})
	mux.HandleFunc("GET /images", func(w http.ResponseWriter, r *http.Request) {
		s.Requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"images":[{"id":161547269,"name":"` + r.URL.Query().Get("name") + `","type":"system","status":"available"}]}`))
	})
	mux.HandleFunc("POST /servers", func(w http.ResponseWriter, r *http.Request) {
		s.Requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"server":{"id":4711,"name":"md-hel1-workers-7c9f8d6b5-x2k4p","status":"initializing","public_net":{"ipv4":{"ip":"203.0.113.7"}}},"action":{"id":1,"status":"running"}}`))
	})
	s.Server = httptest.NewServer(mux)
	return s
}
