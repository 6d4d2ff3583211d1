package hostmodule

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
)

// TestHTTPDefaultsAppliedOnce: NewHTTP gives a zero policy exactly the
// exported defaults, in its policy and its transport, and keeps a set
// limit.
func TestHTTPDefaultsAppliedOnce(t *testing.T) {
	h := NewHTTP(HTTPPolicy{})
	t.Cleanup(h.Close)
	p := h.policy
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"MaxResponseBytes", p.MaxResponseBytes, DefaultMaxResponseBytes},
		{"MaxRequestBodyBytes", p.MaxRequestBodyBytes, DefaultMaxRequestBodyBytes},
		{"MaxRedirects", int64(p.MaxRedirects), DefaultMaxRedirects},
		{"MaxHeaders", int64(p.MaxHeaders), DefaultMaxHeaders},
		{"MaxHeaderBytes", int64(p.MaxHeaderBytes), DefaultMaxHeaderBytes},
		{"Timeout", int64(p.Timeout), int64(DefaultTimeout)},
		// The transport holds the same limits.
		{"transport MaxResponseHeaderBytes", h.transport.MaxResponseHeaderBytes, DefaultMaxHeaderBytes},
		{"transport ResponseHeaderTimeout", int64(h.transport.ResponseHeaderTimeout), int64(DefaultTimeout)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if p.Resolver != net.DefaultResolver {
		t.Errorf("Resolver = %v, want net.DefaultResolver", p.Resolver)
	}
	set := NewHTTP(HTTPPolicy{MaxResponseBytes: 1, MaxRequestBodyBytes: 2, MaxRedirects: 3, MaxHeaders: 4,
		MaxHeaderBytes: 5, Timeout: time.Second})
	t.Cleanup(set.Close)
	if q := set.policy; q.MaxResponseBytes != 1 || q.MaxRequestBodyBytes != 2 || q.MaxRedirects != 3 ||
		q.MaxHeaders != 4 || q.MaxHeaderBytes != 5 || q.Timeout != time.Second {
		t.Errorf("set limits were replaced: %+v", q)
	}
}

func TestHTTPAllowList(t *testing.T) {
	p := HTTPPolicy{AllowedHosts: []string{"api.example.com", "*.cloud.example", "10.0.0.1:8443", "10.0.0.2", "[fd00::5]", "*.any.example:8080", "10.0.0.3:*"}, AllowInsecure: true}
	for _, tc := range []struct {
		url   string
		allow bool
	}{
		{"https://api.example.com/v1", true},
		{"https://API.EXAMPLE.COM/v1", true},
		{"https://api.example.com:8443/v1", false}, // no port in the pattern: the scheme's default only
		{"https://api.example.com:443/v1", true},
		{"http://api.example.com/v1", true}, // port 80: http's default
		{"http://api.example.com:443/v1", false},
		{"https://10.0.0.2/", true},
		{"https://10.0.0.2:22/", false}, // an IP literal without a port does not open every port
		{"https://10.0.0.2:6443/", false},
		{"https://[fd00::5]/", true},
		{"https://[fd00::5]:8443/", false},
		{"https://x.any.example:8080/", true},
		{"https://x.any.example/", false},
		{"https://10.0.0.3:6443/", true}, // "10.0.0.3:*"
		{"https://10.0.0.3/", true},
		{"https://x.api.example.com/", false},
		{"https://example.com/", false},
		{"https://eu.cloud.example/", true},
		{"https://a.b.cloud.example/", true},
		{"https://cloud.example/", false},     // a wildcard does not match the apex
		{"https://evilcloud.example/", false}, // nor a suffix without the dot
		{"https://cloud.example.evil.io/", false},
		{"https://10.0.0.1:8443/", true},
		{"https://10.0.0.1/", false}, // wrong port
		{"ftp://api.example.com:21/", false},
		{"ftp://api.example.com/", false},
		{"file:///etc/passwd", false},
		{"https://user:pw@api.example.com/", false},
		{"https://api.example.com@169.254.169.254/", false},
		{"https://169.254.169.254/", false},
		{"https://[::1]/", false},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Allow(u); (err == nil) != tc.allow {
			t.Errorf("Allow(%s) = %v, want allowed=%v", tc.url, err, tc.allow)
		}
	}
}

// TestHTTPDefaultsDocumented: the HTTP rows of abi/SPEC.md and
// docs/SECURITY.md state the Default constants' values, so a changed
// default cannot leave the docs behind.
func TestHTTPDefaultsDocumented(t *testing.T) {
	size := func(n int64) string {
		if n%(1<<20) == 0 {
			return fmt.Sprintf("%d MiB", n>>20)
		}
		return fmt.Sprintf("%d KiB", n>>10)
	}
	secs := fmt.Sprintf("%d s", int(DefaultTimeout/time.Second))
	for _, doc := range []struct {
		path string
		rows map[string]string // row prefix: what its next cell starts with
	}{
		{"../../abi/SPEC.md", map[string]string{
			"| request body |":                       size(DefaultMaxRequestBodyBytes) + " |",
			"| request header fields; their bytes |": fmt.Sprintf("%d; %s |", DefaultMaxHeaders, size(DefaultMaxHeaderBytes)),
			"| response headers |":                   size(DefaultMaxHeaderBytes) + " |",
			"| response body |":                      size(DefaultMaxResponseBytes) + " |",
			"| redirects followed |":                 fmt.Sprintf("%d,", DefaultMaxRedirects),
			"| time of one request |":                secs + ",",
		}},
		{"../../docs/SECURITY.md", map[string]string{
			"| HTTP request body |":     size(DefaultMaxRequestBodyBytes) + " (",
			"| HTTP request headers |":  fmt.Sprintf("%d fields, %s (", DefaultMaxHeaders, size(DefaultMaxHeaderBytes)),
			"| HTTP response headers |": size(DefaultMaxHeaderBytes) + " (",
			"| HTTP response body |":    size(DefaultMaxResponseBytes) + " (",
			"| HTTP redirects |":        fmt.Sprintf("%d,", DefaultMaxRedirects),
			"| HTTP request time |":     secs + ",",
		}},
	} {
		b, err := os.ReadFile(doc.path)
		if err != nil {
			t.Fatal(err)
		}
		for prefix, want := range doc.rows {
			var rows []string
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(line, prefix) {
					rows = append(rows, line)
				}
			}
			if len(rows) != 1 || !strings.HasPrefix(rows[0], prefix+" "+want) {
				t.Errorf("%s: want one row %q stating %q, found %q", doc.path, prefix, want, rows)
			}
		}
	}
}

// TestHTTPPolicyCopied: the policy NewHTTP governs by is its own; an
// embedder changing its lists afterwards does not widen it.
func TestHTTPPolicyCopied(t *testing.T) {
	p := HTTPPolicy{AllowedHosts: []string{"api.example.com"}, AllowInternalHosts: []string{"sim.example"}}
	h := NewHTTP(p)
	t.Cleanup(h.Close)
	p.AllowedHosts[0] = "evil.example"
	p.AllowInternalHosts[0] = "evil.example"
	if err := h.policy.Allow(&url.URL{Scheme: "https", Host: "evil.example"}); err == nil {
		t.Error("a change to the caller's AllowedHosts reached the policy")
	}
	if h.policy.internalAllowed("evil.example", "443") {
		t.Error("a change to the caller's AllowInternalHosts reached the policy")
	}
}

// TestHTTPWithoutPolicyAllowsNothing: an Env without HTTP refuses every
// request, as a zero policy does.
func TestHTTPWithoutPolicyAllowsNothing(t *testing.T) {
	c := NewCall(context.Background(), &Env{Provider: "test"}, abi.MethodGet, abi.CapHTTP)
	req, _ := json.Marshal(abi.HTTPRequest{Method: "GET", URL: "https://api.example.com/"})
	_, err := c.Invoke(abi.ImportHTTP, req)
	e, _ := err.(*Error)
	expectErrno(t, e, abi.ErrnoDenied, "not in the provider's allowed hosts")
}

// TestHTTPCloseDropsIdleConnections: the requests of one HTTP share its
// transport (calls after the first reuse the kept-alive connection, and a
// wrapper is built once), and Close closes that connection instead of
// leaving it to the idle timeout.
func TestHTTPCloseDropsIdleConnections(t *testing.T) {
	var opened, closed atomic.Int64
	closedEv := make(chan struct{}, 1) // a connection closed
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			closed.Add(1)
			select {
			case closedEv <- struct{}{}:
			default:
			}
		}
	}
	srv.Start()
	defer srv.Close()
	var wraps atomic.Int64
	h := NewHTTP(HTTPPolicy{AllowedHosts: []string{hostPort(t, srv.URL)}, AllowInsecure: true,
		WrapTransport: func(base http.RoundTripper) http.RoundTripper { wraps.Add(1); return base }})
	t.Cleanup(h.Close)
	env := &Env{Provider: "test", HTTP: h}
	req, _ := json.Marshal(abi.HTTPRequest{Method: "GET", URL: srv.URL + "/"})
	for i := range 3 {
		if _, err := NewCall(context.Background(), env, abi.MethodGet, abi.CapHTTP).Invoke(abi.ImportHTTP, req); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if opened.Load() != 1 || closed.Load() != 0 || wraps.Load() != 1 {
		t.Fatalf("after 3 requests in 3 calls: %d connections opened, %d closed, WrapTransport called %d times; want 1, 0, 1",
			opened.Load(), closed.Load(), wraps.Load())
	}
	env.Close()
	// Far below the transport's idle timeout (90 s): Close closed it.
	select {
	case <-closedEv:
	case <-time.After(5 * time.Second):
		t.Fatalf("5 s after Close: %d connections opened, %d closed", opened.Load(), closed.Load())
	}
}
