package hostmodule

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/ratelimit"

	clocktesting "k8s.io/utils/clock/testing"
)

// A 429's Retry-After holds the provider's next request — any call's —
// until it has passed; the request then goes, and the cloud's answers
// are counted.
func TestHTTPTooManyRequestsHoldsTheNextRequest(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	clk := clocktesting.NewFakeClock(time.Now())
	lim := ratelimit.New(0, 0, clk)
	env := &Env{Provider: "test", Logger: slog.New(slog.DiscardHandler),
		HTTP: NewHTTP(HTTPPolicy{AllowedHosts: []string{hostPort(t, srv.URL)}, AllowInsecure: true, Limiter: lim})}
	t.Cleanup(env.Close)
	req := abi.HTTPRequest{Method: "GET", URL: srv.URL}
	if resp, e := invokeHTTP(t, env, abi.ImportHTTP, req); e != nil || resp.Status != 429 {
		t.Fatalf("first request: %+v, %v", resp, e)
	}
	done := make(chan *abi.HTTPResponse, 1)
	go func() {
		resp, _ := invokeHTTP(t, env, abi.ImportHTTPBin, req)
		done <- resp
	}()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(29 * time.Second)
	select {
	case <-done:
		t.Fatal("the request went before the cloud's Retry-After passed")
	case <-time.After(50 * time.Millisecond):
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d requests reached the cloud during its backoff", n)
	}
	clk.Step(time.Second)
	if resp := <-done; resp == nil || resp.Status != 200 {
		t.Fatalf("after the backoff: %+v", resp)
	}
	if s := lim.Stats(); s.TooManyRequests != 1 || s.Waits != 1 || s.Waited != 30*time.Second {
		t.Fatalf("stats %+v", s)
	}
}

// A request the limiter cannot let out before the call's deadline is not
// sent: FAILED at once, naming the rate limit.
func TestHTTPPacedPastTheDeadlineFailsAtOnce(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	lim := ratelimit.New(0.001, 1, nil) // one request, then the next in 1000 s
	env := &Env{Provider: "test", Logger: slog.New(slog.DiscardHandler),
		HTTP: NewHTTP(HTTPPolicy{AllowedHosts: []string{hostPort(t, srv.URL)}, AllowInsecure: true, Limiter: lim})}
	t.Cleanup(env.Close)
	req := abi.HTTPRequest{Method: "GET", URL: srv.URL}
	if _, e := invokeHTTP(t, env, abi.ImportHTTP, req); e != nil {
		t.Fatal(e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := NewCall(ctx, env, abi.MethodGet, abi.CapHTTP)
	defer c.Release()
	b := abi.AppendHTTPRequestFrame(nil, &req)
	start := time.Now()
	_, err := c.Invoke(abi.ImportHTTPBin, b)
	if took := time.Since(start); took > time.Second {
		t.Fatalf("took %v: it waited into the deadline", took)
	}
	e, ok := err.(*Error)
	if !ok || e.Errno != abi.ErrnoFailed {
		t.Fatalf("err %v, want FAILED", err)
	}
	expectErrno(t, e, abi.ErrnoFailed, "rate limited")
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d requests sent", n)
	}
}
