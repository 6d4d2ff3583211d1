package hostmodule

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/testing/testlog"
)

// stubResolver answers every name from a table; it counts lookups so tests
// can show resolution happens at connect time.
type stubResolver struct {
	answers map[string][]string
	lookups atomic.Int64
}

func (r *stubResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.lookups.Add(1)
	ips, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, s := range ips {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

// doHTTP runs req as a guest would, through http_do and again through
// http_do_bin, and returns the result or the errno and message. The two
// framings share one implementation; the test fails if they ever answer
// differently, so every http_do test below is an http_do_bin test too.
func doHTTP(t *testing.T, p HTTPPolicy, logs *testlog.Buffer, req abi.HTTPRequest) (*abi.HTTPResponse, *Error) {
	t.Helper()
	var logger *slog.Logger
	if logs != nil {
		logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	} else {
		logger = slog.New(slog.DiscardHandler)
	}
	env := &Env{Provider: "test", Logger: logger, HTTP: NewHTTP(p)}
	t.Cleanup(env.Close)
	jsonResp, jsonErr := invokeHTTP(t, env, abi.ImportHTTP, req)
	binResp, binErr := invokeHTTP(t, env, abi.ImportHTTPBin, req)
	switch {
	case (jsonErr == nil) != (binErr == nil):
		t.Fatalf("http_do answered %v, http_do_bin %v", jsonErr, binErr)
	// A transport failure's wording depends on timing (which of two
	// timeouts fires first); every other refusal must read the same.
	case jsonErr != nil && (jsonErr.Errno != binErr.Errno || (jsonErr.Errno != abi.ErrnoFailed && jsonErr.Message != binErr.Message)):
		t.Fatalf("http_do answered %s: %s; http_do_bin %s: %s", jsonErr.Errno, jsonErr.Message, binErr.Errno, binErr.Message)
	case jsonErr == nil:
		// Date may tick between the two requests.
		delete(jsonResp.Header, "Date")
		delete(binResp.Header, "Date")
		if jsonResp.Status != binResp.Status || !bytes.Equal(jsonResp.Body, binResp.Body) || !reflect.DeepEqual(jsonResp.Header, binResp.Header) {
			t.Fatalf("http_do answered %+v, http_do_bin %+v", jsonResp, binResp)
		}
	}
	return jsonResp, jsonErr
}

// invokeHTTP runs req through fn (http_do or http_do_bin) in a new call.
func invokeHTTP(t *testing.T, env *Env, fn string, req abi.HTTPRequest) (*abi.HTTPResponse, *Error) {
	t.Helper()
	c := NewCall(context.Background(), env, abi.MethodGet, abi.CapHTTP)
	defer c.Release()
	var b []byte
	if fn == abi.ImportHTTPBin {
		b = abi.AppendHTTPRequestFrame(nil, &req)
	} else {
		b, _ = json.Marshal(req)
	}
	out, err := c.Invoke(fn, b)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s returned a non-errno error %T: %v", fn, err, err)
		}
		return nil, e
	}
	if fn == abi.ImportHTTPBin {
		resp, err := abi.ParseHTTPResponseFrame(out)
		if err != nil {
			t.Fatalf("http_do_bin result: %v", err)
		}
		return resp, nil
	}
	var resp abi.HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	return &resp, nil
}

func expectErrno(t *testing.T, e *Error, want abi.Errno, contains string) {
	t.Helper()
	if e == nil {
		t.Fatalf("want errno %s, got success", want)
	}
	if e.Errno != want || !strings.Contains(e.Message, contains) {
		t.Errorf("want %s containing %q, got %s: %s", want, contains, e.Errno, e.Message)
	}
}

func hostPort(t *testing.T, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func TestHTTPLoopbackAllowedByIPLiteral(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Seen-Host", r.Host)
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()
	p := HTTPPolicy{AllowedHosts: []string{hostPort(t, srv.URL)}, AllowInsecure: true}
	resp, e := doHTTP(t, p, nil, abi.HTTPRequest{Method: "GET", URL: srv.URL + "/x",
		Header: map[string][]string{"Host": {"metadata.google.internal"}}})
	if e != nil {
		t.Fatal(e)
	}
	if resp.Status != 200 || string(resp.Body) != "hello" {
		t.Errorf("got %d %q", resp.Status, resp.Body)
	}
	// The guest's Host header is dropped: the host decides where it talks.
	if got := resp.Header["X-Seen-Host"]; len(got) != 1 || got[0] != hostPort(t, srv.URL) {
		t.Errorf("server saw Host %v", got)
	}
}

func TestHTTPSOnlyByDefault(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	_, e := doHTTP(t, HTTPPolicy{AllowedHosts: []string{hostPort(t, srv.URL)}}, nil,
		abi.HTTPRequest{Method: "GET", URL: srv.URL})
	expectErrno(t, e, abi.ErrnoDenied, "plain http")
}

func TestHTTPSWithPrivateCA(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "tls") }))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	p := HTTPPolicy{AllowedHosts: []string{hostPort(t, srv.URL)}}
	p.TLSConfig = &tls.Config{RootCAs: pool}
	resp, e := doHTTP(t, p, nil, abi.HTTPRequest{Method: "GET", URL: srv.URL})
	if e != nil {
		t.Fatal(e)
	}
	if string(resp.Body) != "tls" {
		t.Errorf("body %q", resp.Body)
	}
	// Without the CA the certificate is refused.
	_, e = doHTTP(t, HTTPPolicy{AllowedHosts: []string{hostPort(t, srv.URL)}}, nil, abi.HTTPRequest{Method: "GET", URL: srv.URL})
	expectErrno(t, e, abi.ErrnoFailed, "certificate")
}

// TestHTTPInternalAddressesDenied proves the connect-time rules with a
// resolver stub: an allowed host name that resolves to an internal address
// is refused, whatever the address family or encoding.
func TestHTTPInternalAddressesDenied(t *testing.T) {
	for _, ip := range []string{
		"127.0.0.1", "127.1.2.3", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "169.254.0.1",
		"100.64.0.1", "0.0.0.0", "224.0.0.1", "239.255.255.250", "255.255.255.255",
		"::1", "::", "fe80::1", "fc00::1", "fd00:ec2::254", "ff02::1", "::ffff:169.254.169.254", "::ffff:127.0.0.1",
		"64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1",
	} {
		t.Run(ip, func(t *testing.T) {
			r := &stubResolver{answers: map[string][]string{"api.example.com": {ip}}}
			p := HTTPPolicy{AllowedHosts: []string{"api.example.com"}, Resolver: r, Timeout: time.Second}
			_, e := doHTTP(t, p, nil, abi.HTTPRequest{Method: "GET", URL: "https://api.example.com/"})
			expectErrno(t, e, abi.ErrnoDenied, "resolves to an address the policy does not allow")
			// doHTTP sends twice (http_do, http_do_bin): one lookup each.
			if r.lookups.Load() != 2 {
				t.Errorf("%d lookups, want 1 per request at connect time", r.lookups.Load())
			}
		})
	}
	// A mixed answer: the internal addresses are dropped, never dialled.
	r := &stubResolver{answers: map[string][]string{"api.example.com": {"10.0.0.1", "169.254.169.254"}}}
	_, e := doHTTP(t, HTTPPolicy{AllowedHosts: []string{"api.example.com"}, Resolver: r}, nil,
		abi.HTTPRequest{Method: "GET", URL: "https://api.example.com/"})
	expectErrno(t, e, abi.ErrnoDenied, "10.0.0.1 is private, 169.254.169.254 is link-local (cloud metadata)")
}

// TestHTTPInternalAllowedExplicitly: a name the policy lists in
// AllowInternalHosts may resolve to loopback; it reaches the real server.
func TestHTTPInternalAllowedExplicitly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "sim") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(hostPort(t, srv.URL))
	r := &stubResolver{answers: map[string][]string{"sim.example": {"127.0.0.1"}}}
	p := HTTPPolicy{AllowedHosts: []string{"sim.example:" + port, "sim.example:1"}, AllowInternalHosts: []string{"sim.example:" + port},
		AllowInsecure: true, Resolver: r}
	resp, e := doHTTP(t, p, nil, abi.HTTPRequest{Method: "GET", URL: "http://sim.example:" + port + "/"})
	if e != nil {
		t.Fatal(e)
	}
	if string(resp.Body) != "sim" {
		t.Errorf("body %q", resp.Body)
	}
	// DNS rebinding: the same name now resolves to the metadata address.
	// The answer is checked again at connect time (a new connection, as the
	// port differs), and the allowance is for that port only.
	r.answers["sim.example"] = []string{"169.254.169.254"}
	_, e = doHTTP(t, p, nil, abi.HTTPRequest{Method: "GET", URL: "http://sim.example:1/"})
	expectErrno(t, e, abi.ErrnoDenied, "169.254.169.254 is link-local")
}

func TestHTTPRedirects(t *testing.T) {
	var hops atomic.Int64
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("/metadata", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	mux.HandleFunc("/rebind", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://meta.example/latest/", http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		hops.Add(1)
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/final", http.StatusFound)
	})
	mux.HandleFunc("/final", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "final") })
	r := &stubResolver{answers: map[string][]string{"meta.example": {"169.254.169.254"}}}
	p := HTTPPolicy{AllowedHosts: []string{hostPort(t, srv.URL), "meta.example"}, AllowInsecure: true, Resolver: r}

	resp, e := doHTTP(t, p, nil, abi.HTTPRequest{Method: "GET", URL: srv.URL + "/ok"})
	if e != nil || string(resp.Body) != "final" {
		t.Fatalf("a redirect within the allowed host: %v %v", resp, e)
	}
	// To a host not in the allow-list.
	_, e = doHTTP(t, p, nil, abi.HTTPRequest{Method: "GET", URL: srv.URL + "/metadata"})
	expectErrno(t, e, abi.ErrnoDenied, `host "169.254.169.254" is not in the provider's allowed hosts`)
	// To an allowed name that resolves to the metadata service.
	_, e = doHTTP(t, p, nil, abi.HTTPRequest{Method: "GET", URL: srv.URL + "/rebind"})
	expectErrno(t, e, abi.ErrnoDenied, "169.254.169.254 is link-local")
	// Endless redirects stop at the limit.
	p.MaxRedirects = 3
	_, e = doHTTP(t, p, nil, abi.HTTPRequest{Method: "GET", URL: srv.URL + "/loop"})
	expectErrno(t, e, abi.ErrnoDenied, "more than 3 redirects")
	if hops.Load() != 2*4 { // 4 per request, one request per framing
		t.Errorf("%d hops, want 4 per request", hops.Load())
	}
}

func TestHTTPLimits(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) { w.Write(make([]byte, 2048)) })
	mux.HandleFunc("/bigheader", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("a", 100<<10))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	p := HTTPPolicy{AllowedHosts: []string{hostPort(t, srv.URL)}, AllowInsecure: true, MaxResponseBytes: 1024,
		Timeout: 200 * time.Millisecond}

	_, e := doHTTP(t, p, nil, abi.HTTPRequest{Method: "GET", URL: srv.URL + "/big"})
	expectErrno(t, e, abi.ErrnoTooLarge, "response body exceeds the limit of 1024 bytes")

	_, e = doHTTP(t, p, nil, abi.HTTPRequest{Method: "GET", URL: srv.URL + "/bigheader"})
	expectErrno(t, e, abi.ErrnoFailed, "header")

	start := time.Now()
	_, e = doHTTP(t, p, nil, abi.HTTPRequest{Method: "GET", URL: srv.URL + "/slow"})
	expectErrno(t, e, abi.ErrnoFailed, "")
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the time limit did not stop the request: %v", d)
	}

	_, e = doHTTP(t, p, nil, abi.HTTPRequest{Method: "POST", URL: srv.URL + "/", Body: make([]byte, 4<<20+1)})
	expectErrno(t, e, abi.ErrnoTooLarge, "request body of 4194305 bytes exceeds the limit of 4194304")

	many := map[string][]string{}
	for i := 0; i < 65; i++ {
		many[fmt.Sprintf("X-H%d", i)] = []string{"v"}
	}
	_, e = doHTTP(t, p, nil, abi.HTTPRequest{Method: "GET", URL: srv.URL + "/", Header: many})
	expectErrno(t, e, abi.ErrnoTooLarge, "65 request header fields exceed the limit of 64")

	_, e = doHTTP(t, p, nil, abi.HTTPRequest{Method: "GET", URL: srv.URL + "/",
		Header: map[string][]string{"X-Big": {strings.Repeat("a", 64<<10)}}})
	expectErrno(t, e, abi.ErrnoTooLarge, "request headers of")

	_, e = doHTTP(t, p, nil, abi.HTTPRequest{Method: "BAD METHOD", URL: srv.URL + "/"})
	expectErrno(t, e, abi.ErrnoInvalid, "invalid method")
}

func TestHTTPLogRedaction(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	var logs testlog.Buffer
	p := HTTPPolicy{AllowedHosts: []string{hostPort(t, srv.URL)}, AllowInsecure: true}
	_, e := doHTTP(t, p, &logs, abi.HTTPRequest{Method: "GET", URL: srv.URL + "/?token=SECRET-QUERY",
		Header: map[string][]string{
			"Authorization": {"Bearer SECRET-AUTH"}, "X-Auth-Token": {"SECRET-X"}, "Cookie": {"s=SECRET-COOKIE"},
			"X-Api-Key": {"SECRET-KEY"}, "Accept": {"application/json"},
		}})
	if e != nil {
		t.Fatal(e)
	}
	// A failed request logs too.
	_, e = doHTTP(t, HTTPPolicy{AllowedHosts: []string{"127.0.0.1:1"}, AllowInsecure: true}, &logs,
		abi.HTTPRequest{Method: "GET", URL: "http://127.0.0.1:1/?token=SECRET-QUERY",
			Header: map[string][]string{"Authorization": {"Bearer SECRET-AUTH"}}})
	expectErrno(t, e, abi.ErrnoFailed, "")
	if strings.Contains(e.Message, "SECRET") {
		t.Errorf("the error message leaks a secret: %s", e.Message)
	}
	out := logs.String()
	if strings.Contains(out, "SECRET") {
		t.Errorf("a secret reached the log:\n%s", out)
	}
	if !strings.Contains(out, "REDACTED") || !strings.Contains(out, "application/json") {
		t.Errorf("the log does not show redacted headers:\n%s", out)
	}
}

// TestHTTPDialerRefusesUnlistedLiteral: the dialer alone refuses an
// internal IP literal the policy does not name, without connecting.
func TestHTTPDialerRefusesUnlistedLiteral(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Each accepted connection's peer address, in accept order.
	accepted := make(chan string, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c.RemoteAddr().String()
			c.Close()
		}
	}()
	h := NewHTTP(HTTPPolicy{AllowedHosts: []string{"*.example.com"}})
	t.Cleanup(h.Close)
	_, err = h.dialContext(context.Background(), "tcp", ln.Addr().String())
	var denied *deniedError
	if !errors.As(err, &denied) {
		t.Fatalf("want a denial, got %v", err)
	}
	// A connection of our own after the denial: had the dialer connected,
	// the listener would have accepted that connection first.
	own, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if first := <-accepted; first != own.LocalAddr().String() {
		t.Errorf("the dialer connected (from %s) before our own connection", first)
	}
}

// A transport the embedder wraps around the policy's (record/replay,
// tracing) cannot open the way to loopback: with WithHTTPClient an empty
// *http.Client let a guest reach "localhost" whatever allowInternalHosts
// said (red-team finding 14); the wrapper now gets the hardened transport.
func TestHTTPWrappedTransportKeepsTheAddressChecks(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(hostPort(t, srv.URL))
	var wrapped atomic.Int64
	p := HTTPPolicy{AllowedHosts: []string{"localhost:" + port}, AllowInsecure: true,
		WrapTransport: func(base http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				wrapped.Add(1)
				return base.RoundTrip(r)
			})
		}}
	_, e := doHTTP(t, p, nil, abi.HTTPRequest{Method: "GET", URL: "http://localhost:" + port + "/"})
	expectErrno(t, e, abi.ErrnoDenied, "resolves to an address the policy does not allow")
	// One request per framing (doHTTP sends both).
	if wrapped.Load() != 2 || hits.Load() != 0 {
		t.Errorf("the wrapper saw %d requests and the loopback server %d; want 2 and 0", wrapped.Load(), hits.Load())
	}
	// Named in allowInternalHosts, the same request goes through the wrapper.
	p.AllowInternalHosts = []string{"localhost:" + port}
	if _, e := doHTTP(t, p, nil, abi.HTTPRequest{Method: "GET", URL: "http://localhost:" + port + "/"}); e != nil {
		t.Fatal(e)
	}
	if hits.Load() != 2 {
		t.Errorf("the allowed requests did not both arrive: %d", hits.Load())
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
