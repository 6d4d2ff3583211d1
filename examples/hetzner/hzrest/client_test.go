package hzrest_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
	"github.com/wasmprov/wasmprov/examples/hetzner/hzprovider"
	"github.com/wasmprov/wasmprov/examples/hetzner/hzrest"
	"github.com/wasmprov/wasmprov/examples/hetzner/hzrest/nethttp"
)

// newClient is hzrest over net/http against a simulator on loopback.
func newClient(t *testing.T) (*hzrest.Client, *hcloudsim.Sim) {
	t.Helper()
	sim := hcloudsim.New(hcloudsim.Options{})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	api := hzrest.New(nethttp.Doer{Client: srv.Client()})(srv.URL+"/v1", sim.Token())
	return api.(*hzrest.Client), sim
}

// TestClientNative: hzrest natively, over nethttp, against the simulator:
// answers decode, an API error keeps its code, message and Retry-After, a
// body that is no error object is named, a transport failure names the
// request as net/http's client does, and the context bounds a request.
func TestClientNative(t *testing.T) {
	ctx := context.Background()
	c, sim := newClient(t)
	loc, err := c.Location(ctx, "fsn1")
	if err != nil || loc == nil || loc.Name != "fsn1" {
		t.Fatalf("Location(fsn1) = %+v, %v", loc, err)
	}
	if s, err := c.Server(ctx, 987654); err != nil || s != nil {
		t.Fatalf("a missing server: %+v, %v; want nil, nil", s, err)
	}

	sim.Inject(hcloudsim.Fault{Path: "/v1/locations", Status: 503, Times: 1, Header: map[string]string{"Retry-After": "7"}})
	_, err = c.Location(ctx, "fsn1")
	var ae *hzprovider.APIError
	if !errors.As(err, &ae) || ae.Status != 503 || ae.Code == "" || ae.RetryAfter != 7*time.Second {
		t.Fatalf("a 503 with Retry-After: %#v", err)
	}

	sim.Inject(hcloudsim.Fault{Path: "/v1/locations", Status: 500, Body: "<html>oops</html>", Times: 1})
	_, err = c.Location(ctx, "fsn1")
	if !errors.As(err, &ae) || ae.Status != 500 || ae.Code != "" || !strings.Contains(ae.Message, "answer is not an error object") {
		t.Fatalf("a 500 with garbage: %v", err)
	}

	// Every time: net/http retries a GET once on a connection it reused.
	sim.Inject(hcloudsim.Fault{Path: "/v1/locations", Drop: true})
	if _, err = c.Location(ctx, "fsn1"); err == nil || !strings.HasPrefix(err.Error(), `Get "`+c.Endpoint+"/locations?") {
		t.Fatalf("a dropped connection: %v", err)
	}
	sim.ClearFaults()

	sim.Inject(hcloudsim.Fault{Path: "/v1/locations", Latency: 5 * time.Second, Times: 1})
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err = c.Location(cctx, "fsn1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a request past its deadline: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the request returned %v after its deadline", took)
	}
}

// TestRetryAfterFromRateLimit: a 429 without Retry-After waits for one
// request of the budget to refill, read from the RateLimit-* headers.
func TestRetryAfterFromRateLimit(t *testing.T) {
	reset := time.Now().Add(100 * time.Second).Unix()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit-Limit", "3600")
		w.Header().Set("RateLimit-Remaining", "3590")
		w.Header().Set("RateLimit-Reset", strconv.FormatInt(reset, 10))
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":{"code":"rate_limit_exceeded","message":"slow down"}}`))
	}))
	defer srv.Close()
	c := hzrest.New(nethttp.Doer{})(srv.URL, "t")
	_, err := c.Location(context.Background(), "fsn1")
	var ae *hzprovider.APIError
	if !errors.As(err, &ae) || ae.Code != "rate_limit_exceeded" || ae.RetryAfter < 9*time.Second || ae.RetryAfter > 10*time.Second {
		t.Fatalf("a 429 with RateLimit headers: %#v", err)
	}
}

// TestHeaderGet: names match whatever their case, as in HTTP (the host's
// http_do need not canonicalize them).
func TestHeaderGet(t *testing.T) {
	h := hzrest.Header{"retry-after": {"3"}, "Content-Type": {"a", "b"}, "Empty": {}}
	for key, want := range map[string]string{"Retry-After": "3", "content-type": "a", "Empty": "", "Missing": ""} {
		if got := h.Get(key); got != want {
			t.Errorf("Get(%q) = %q, want %q", key, got, want)
		}
	}
}
