package hostmodule

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/ratelimit"
	"github.com/wasmprov/wasmprov/internal/testing/testlog"

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
	// A released waiter leaves the fake clock at once (Step fires it
	// synchronously): still waiting on it means still held.
	if !clk.HasWaiters() {
		t.Fatal("the request was released before the cloud's Retry-After passed")
	}
	select {
	case <-done:
		t.Fatal("the request went before the cloud's Retry-After passed")
	default:
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

// A guest that loops on http_do while its provider is throttled gets FAILED
// each time, and the host logs nothing an operator sees for it: one line
// per refused request would let a guest write up to MaxHTTPRequestsPerCall
// host lines a call. The refusals are counted (the limiter's stats, the
// provider's metrics) and logged at DEBUG.
func TestHTTPRateLimitRefusalsAreNotLoggedAboveDebug(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	lim := ratelimit.New(0.001, 1, nil)
	logs := testlog.NewCapture()
	env := &Env{Provider: "test", Logger: slog.New(logs),
		HTTP: NewHTTP(HTTPPolicy{AllowedHosts: []string{hostPort(t, srv.URL)}, AllowInsecure: true, Limiter: lim})}
	t.Cleanup(env.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := NewCall(ctx, env, abi.MethodGet, abi.CapHTTP)
	defer c.Release()
	b := abi.AppendHTTPRequestFrame(nil, &abi.HTTPRequest{Method: "GET", URL: srv.URL})
	const tries = 100
	refused := 0
	for range tries {
		if _, err := c.Invoke(abi.ImportHTTPBin, b); err != nil {
			refused++
		}
	}
	if refused != tries-1 || hits.Load() != 1 {
		t.Fatalf("%d of %d refused, %d sent: want all but the first refused", refused, tries, hits.Load())
	}
	debug, above := 0, []testlog.Record{}
	for _, r := range logs.All() {
		if r.Level > slog.LevelDebug {
			above = append(above, r)
		}
		if strings.Contains(r.Msg, "rate limited") {
			debug++
		}
	}
	if len(above) > 0 {
		t.Errorf("%d records above DEBUG, the first: %s", len(above), above[0])
	}
	if debug != tries-1 {
		t.Errorf("%d DEBUG records of a refusal, want %d", debug, tries-1)
	}
	if s := lim.Stats(); s.DeadlineExceeded != tries-1 {
		t.Errorf("limiter counted %d refusals, want %d", s.DeadlineExceeded, tries-1)
	}
}
