package hostmodule

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/hostalias"
)

// A simulator on loopback standing in for a public API: the guest writes
// the API's URL, the host sends the request to the simulator.
func TestHostAliases(t *testing.T) {
	var paths []string
	sim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.RequestURI())
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "https://api.example.test/v1/new", http.StatusFound)
			return
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(sim.Close)
	aliases, err := hostalias.Parse(map[string]string{"api.example.test": sim.URL})
	if err != nil {
		t.Fatal(err)
	}
	// No resolver entry for api.example.test: the name is never looked up.
	policy := HTTPPolicy{AllowedHosts: []string{"api.example.test"}, Resolver: &stubResolver{}}.WithHostAliases(aliases)

	resp, e := doHTTP(t, policy, nil, abi.HTTPRequest{Method: "GET", URL: "https://api.example.test/v1/servers?page=2"})
	if e != nil || resp.Status != 200 || string(resp.Body) != `{"ok":true}` {
		t.Fatalf("aliased request: %v %v", resp, e)
	}
	// A redirect to the aliased host follows the alias too.
	if resp, e := doHTTP(t, policy, nil, abi.HTTPRequest{Method: "GET", URL: "https://api.example.test/old"}); e != nil || resp.Status != 200 {
		t.Fatalf("redirect: %v %v", resp, e)
	}
	// doHTTP sends each request twice, through http_do and http_do_bin.
	if got, want := strings.Join(paths, ","), "GET /v1/servers?page=2,GET /v1/servers?page=2,GET /old,GET /v1/new,GET /old,GET /v1/new"; got != want {
		t.Errorf("the simulator saw %s, want %s", got, want)
	}

	// The alias does not widen the allow-list: the guest's URL is checked
	// as written.
	_, e = doHTTP(t, HTTPPolicy{AllowedHosts: []string{"other.example"}}.WithHostAliases(aliases), nil,
		abi.HTTPRequest{Method: "GET", URL: "https://api.example.test/v1/servers"})
	expectErrno(t, e, abi.ErrnoDenied, "not in the provider's allowed hosts")
	// Nor opens loopback for anything else: the simulator by its own
	// address stays refused.
	_, e = doHTTP(t, policy, nil, abi.HTTPRequest{Method: "GET", URL: sim.URL + "/v1/servers"})
	expectErrno(t, e, abi.ErrnoDenied, "")
	// Another port of the aliased host is not aliased.
	_, e = doHTTP(t, HTTPPolicy{AllowedHosts: []string{"api.example.test:*"}, Resolver: &stubResolver{}}.WithHostAliases(aliases), nil,
		abi.HTTPRequest{Method: "GET", URL: "https://api.example.test:8443/v1/servers"})
	expectErrno(t, e, abi.ErrnoFailed, "no such host")
}
