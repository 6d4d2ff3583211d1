package hostalias

import (
	"net/url"
	"strings"
	"testing"
)

func TestParseHostAliasesRefusesNonLoopbackTargets(t *testing.T) {
	for to, want := range map[string]string{
		"http://10.0.0.5:8080":         "must be a loopback address",
		"http://169.254.169.254:80":    "must be a loopback address",
		"http://sim.example:8080":      "must be a loopback address",
		"http://127.0.0.1":             "needs a port",
		"ftp://127.0.0.1:21":           "http:// or https://",
		"http://127.0.0.1:80/v1":       "scheme, host and port only",
		"http://user@127.0.0.1:80":     "scheme, host and port only",
		"http://[::ffff:10.0.0.1]:808": "must be a loopback address",
	} {
		if _, err := Parse(map[string]string{"api.hetzner.cloud": to}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", to, err, want)
		}
	}
	for _, to := range []string{"http://127.0.0.1:8080", "https://127.0.0.2:8443", "http://[::1]:80", "http://localhost:9000"} {
		if _, err := Parse(map[string]string{"api.hetzner.cloud": to}); err != nil {
			t.Errorf("%s: %v", to, err)
		}
	}
	if _, err := Parse(map[string]string{"*.hetzner.cloud": "http://127.0.0.1:1"}); err == nil {
		t.Error("a pattern as the alias's host was accepted")
	}
}

// Target: a "host:port" key matches the URL's port (the scheme's default
// filled in), a "host" key only a URL without a port; IsTarget names the
// targets the dialler lets be loopback.
func TestTarget(t *testing.T) {
	a, err := Parse(map[string]string{"api.example.test": "http://127.0.0.1:8080", "other.example:8443": "https://[::1]:9443"})
	if err != nil {
		t.Fatal(err)
	}
	for raw, want := range map[string]string{
		"https://API.example.test/v1":      "http://127.0.0.1:8080/v1",
		"https://api.example.test:8443/v1": "https://api.example.test:8443/v1",
		"https://other.example:8443/x?y=1": "https://[::1]:9443/x?y=1",
		"https://other.example/x":          "https://other.example/x",
		"http://unrelated.example:8080/":   "http://unrelated.example:8080/",
	} {
		u, _ := url.Parse(raw)
		if got := a.Apply(u).String(); got != want {
			t.Errorf("Apply(%s) = %s, want %s", raw, got, want)
		}
	}
	if !a.IsTarget("127.0.0.1", "8080") || !a.IsTarget("[::1]", "9443") || a.IsTarget("127.0.0.1", "9443") {
		t.Error("IsTarget does not name exactly the targets")
	}
	if got := strings.Join(a.List(), ", "); got != "api.example.test → http://127.0.0.1:8080, other.example:8443 → https://[::1]:9443" {
		t.Errorf("List = %s", got)
	}
}
