package hostmodule

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wasmprov/wasmprov/internal/hostalias"
	"github.com/wasmprov/wasmprov/internal/ratelimit"
)

// The defaults of HTTPPolicy's zero fields, applied by NewHTTP and nowhere
// else. runtime re-exports them as its Policy's defaults; abi/SPEC.md and
// docs/SECURITY.md state the same numbers.
const (
	// DefaultMaxResponseBytes caps a response body.
	DefaultMaxResponseBytes = 16 << 20
	// DefaultMaxRequestBodyBytes caps a request body.
	DefaultMaxRequestBodyBytes = 4 << 20
	// DefaultMaxRedirects caps the redirects one request follows.
	DefaultMaxRedirects = 5
	// DefaultMaxHeaders caps the request header fields.
	DefaultMaxHeaders = 64
	// DefaultMaxHeaderBytes caps the request headers and, separately, the
	// response headers.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultTimeout bounds one request within the call's own deadline.
	DefaultTimeout = 60 * time.Second
)

// HTTPPolicy governs http_do. Zero limits take the Default constants above.
type HTTPPolicy struct {
	// AllowedHosts lists the hosts a guest may reach: "api.hetzner.cloud"
	// (the scheme's default port), "*.example.com" (any subdomain, not the
	// apex), "127.0.0.1:8080" (that port only), "127.0.0.1:*" (any port).
	// Empty allows nothing.
	AllowedHosts []string
	// AllowInsecure permits plain http:// URLs. Off by default: credentials
	// travel in provider requests.
	AllowInsecure bool
	// MaxResponseBytes caps a response body (DefaultMaxResponseBytes).
	MaxResponseBytes int64
	// MaxRedirects caps redirects followed (DefaultMaxRedirects); each
	// target is checked against the policy again.
	MaxRedirects int
	// Timeout bounds one request, within the call's own deadline
	// (DefaultTimeout).
	Timeout time.Duration
	// WrapTransport, when set, wraps the policy's hardened transport (its
	// argument) with the round tripper that sends the requests, e.g. a
	// record/replay transport for tests. NewHTTP calls it once. Every
	// request still passes the policy first (scheme, allow-list, sizes,
	// headers, redirects, time); the connect-time address checks live in
	// the hardened transport, so a wrapper that sends requests without it
	// (a replayer answering from a file, a recorder forwarding to a
	// simulator) is trusted to reach only what it should.
	WrapTransport func(http.RoundTripper) http.RoundTripper

	// AllowInternalHosts lists hosts (patterns as in AllowedHosts) that may
	// resolve to loopback, private, link-local (169.254.169.254),
	// multicast, unspecified or other non-public addresses. Any other host
	// is refused such addresses at connect time, on every redirect too.
	// An AllowedHosts entry that is itself an IP literal ("127.0.0.1:8080")
	// allows that address.
	AllowInternalHosts []string
	// MaxRequestBodyBytes caps a request body (DefaultMaxRequestBodyBytes).
	MaxRequestBodyBytes int64
	// MaxHeaders caps the number of request header fields
	// (DefaultMaxHeaders).
	MaxHeaders int
	// MaxHeaderBytes caps the total size of the request headers and of the
	// response headers (DefaultMaxHeaderBytes).
	MaxHeaderBytes int
	// Resolver resolves host names for the address check; nil means
	// net.DefaultResolver.
	Resolver Resolver
	// TLSConfig configures TLS, e.g. a private CA; nil means the system's
	// roots.
	TLSConfig *tls.Config
	// Limiter paces the requests (nil: unpaced): it is the provider's, shared
	// by every version, so the host waits for it before each request and
	// tells it each answer (a 429's Retry-After holds them all).
	Limiter *ratelimit.Limiter
	// hostAliases sends requests for a host elsewhere (hostalias.Parse:
	// loopback targets only). Set with WithHostAliases.
	hostAliases hostalias.Aliases
}

// WithHostAliases returns p with aliases (as hostalias.Parse returns
// them) installed.
func (p HTTPPolicy) WithHostAliases(aliases hostalias.Aliases) HTTPPolicy {
	p.hostAliases = aliases
	return p
}

// withDefaults is the one place the defaults are applied: it returns p
// with every zero (or negative) limit and a nil resolver replaced.
func (p HTTPPolicy) withDefaults() HTTPPolicy {
	if p.MaxResponseBytes <= 0 {
		p.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if p.MaxRequestBodyBytes <= 0 {
		p.MaxRequestBodyBytes = DefaultMaxRequestBodyBytes
	}
	if p.MaxRedirects <= 0 {
		p.MaxRedirects = DefaultMaxRedirects
	}
	if p.MaxHeaders <= 0 {
		p.MaxHeaders = DefaultMaxHeaders
	}
	if p.MaxHeaderBytes <= 0 {
		p.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if p.Timeout <= 0 {
		p.Timeout = DefaultTimeout
	}
	if p.Resolver == nil {
		p.Resolver = net.DefaultResolver
	}
	return p
}

// Allow reports whether the policy permits a request to u.
func (p *HTTPPolicy) Allow(u *url.URL) error {
	switch u.Scheme {
	case "https":
	case "http":
		if !p.AllowInsecure {
			return &deniedError{fmt.Sprintf("plain http to %s is not allowed (policy allows https only)", u.Host)}
		}
	default:
		return &deniedError{fmt.Sprintf("scheme %q is not allowed", u.Scheme)}
	}
	if u.User != nil {
		return &deniedError{"URLs with user info are not allowed"}
	}
	host, port := u.Hostname(), u.Port()
	defaultPort := map[string]string{"http": "80", "https": "443"}[u.Scheme]
	if port == "" {
		port = defaultPort
	}
	for _, pattern := range p.AllowedHosts {
		if matchHost(pattern, strings.ToLower(host), port, defaultPort) {
			return nil
		}
	}
	return &deniedError{fmt.Sprintf("host %q is not in the provider's allowed hosts", u.Host)}
}

// matchHost matches "host", "host:port", "*.domain" and "*.domain:port";
// a port of "*" matches any port. A pattern without a port allows the
// scheme's default port (defaultPort) only: "10.0.0.5" must not open every
// service on that address.
func matchHost(pattern, host, port, defaultPort string) bool {
	pattern = strings.ToLower(pattern)
	pHost, pPort := pattern, defaultPort
	if h, pt, err := net.SplitHostPort(pattern); err == nil {
		pHost, pPort = h, pt
	} else if strings.HasPrefix(pattern, "[") && strings.HasSuffix(pattern, "]") {
		pHost = pattern[1 : len(pattern)-1] // a bracketed IPv6 literal without a port
	}
	if pPort != port && pPort != "*" {
		return false
	}
	if suffix, ok := strings.CutPrefix(pHost, "*."); ok {
		return strings.HasSuffix(host, "."+suffix)
	}
	return pHost == host
}

type deniedError struct{ reason string }

func (e *deniedError) Error() string { return e.reason }
