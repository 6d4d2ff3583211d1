package runtime_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wasmprov/wasmprov/provider"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testlog"
	"github.com/wasmprov/wasmprov/runtime"
)

// httpGuest is the SDK's HTTP test guest: its Validate checks
// provider.DoHTTP and hosthttp answers itself and reports what differs.
const httpGuest = "guests/go/hosthttp/testdata/httpguest"

// TestHTTPSDKOverBinaryFraming runs a Go guest built with the SDK against
// a loopback server: provider.DoHTTP and a hosthttp client go through
// http_do_bin (status, repeated headers both ways, a binary body, a body
// past the SDK's first-try buffer, a DENIED refusal naming http_do_bin),
// on whichever engine the test binary runs.
func TestHTTPSDKOverBinaryFraming(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 100<<10/16)
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch r.URL.Path {
		case "/echo":
			var b bytes.Buffer
			b.ReadFrom(r.Body)
			w.Header().Set("X-Seen", r.Method+" "+r.URL.RequestURI()+" "+strings.Join(r.Header.Values("X-Multi"), ","))
			w.Header()["X-Two"] = []string{"1", "2"}
			w.WriteHeader(http.StatusCreated)
			w.Write(b.Bytes())
		case "/big":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(big)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	ctx := context.Background()
	logger, logs := testlog.NewText()
	rt := newRuntime(t, runtime.WithLogger(logger))
	p, err := rt.Load(ctx, testguest.Build(t, httpGuest),
		runtime.WithPolicy(runtime.Policy{AllowedHosts: []string{strings.TrimPrefix(srv.URL, "http://")}, AllowInsecureHTTP: true}))
	if err != nil {
		t.Fatal(err)
	}
	m := newMachine("m1", "uid-1", map[string]any{"endpoint": srv.URL})
	if err := p.Validate(provider.WithMachineNamespace(ctx, m.Namespace), m.Spec, nil); err != nil {
		t.Fatalf("the guest's checks: %v", err)
	}
	// DoHTTP, the hosthttp client and http.DefaultClient (hosthttp's
	// Transport once linked: the sandbox has no sockets).
	if n := requests.Load(); n != 3 {
		t.Errorf("the server saw %d requests, want 3 (the forbidden one never leaves the host)", n)
	}
	if !strings.Contains(logs.String(), "http request denied by policy") {
		t.Errorf("the refusal is not logged:\n%s", logs.String())
	}

	// Without the http capability the SDK's request is refused as
	// NOT_DECLARED, and the host names the function it came through.
	logger, logs = testlog.NewText()
	rt = newRuntime(t, runtime.WithLogger(logger))
	p, err = rt.Load(ctx, testguest.Build(t, httpGuest), runtime.WithPolicy(runtime.Policy{Capabilities: []string{"log"}}))
	if err != nil {
		t.Fatal(err)
	}
	err = p.Validate(provider.WithMachineNamespace(ctx, m.Namespace), m.Spec, nil)
	if err == nil || !strings.Contains(err.Error(), "capability not declared or not granted") {
		t.Errorf("Validate without http: %v", err)
	}
	if !strings.Contains(logs.String(), "function=http_do_bin") {
		t.Errorf("the refusal does not name http_do_bin:\n%s", logs.String())
	}
}
