// Package hostalias is the one implementation of host aliases: requests a
// guest makes to one host (api.hetzner.cloud) sent to a loopback address
// instead, so an unmodified provider reaches a simulator. The host's HTTP
// path (internal/hostmodule) follows them live; the cassette recorder
// follows the same aliases while it records the URL the guest asked for.
//
// Targets are loopback only: an alias to anywhere else would be a way
// round the host's address checks, configured or not. The guest's URL is
// checked against the policy as the guest wrote it; the rewrite happens
// after, so an alias never widens what a guest may name.
package hostalias

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"sort"
	"strings"
)

// Aliases maps lower-case "host:port" (or "host", which matches a URL
// without a port) to the scheme and host requests go to instead.
type Aliases map[string]*url.URL

// Parse checks aliases (host or host:port → a URL such as
// "http://127.0.0.1:8080"). A target must be http or https on a loopback
// IP literal or "localhost", with a port, and nothing else (no user, path,
// query or fragment).
func Parse(aliases map[string]string) (Aliases, error) {
	if len(aliases) == 0 {
		return nil, nil
	}
	out := make(Aliases, len(aliases))
	for from, to := range aliases {
		key := strings.ToLower(from)
		if key == "" || strings.ContainsAny(key, "/*@ ") {
			return nil, fmt.Errorf("hostAliases: %q is not a host or host:port", from)
		}
		u, err := url.Parse(to)
		if err != nil {
			return nil, fmt.Errorf("hostAliases: %s: %v", from, err)
		}
		switch {
		case u.Scheme != "http" && u.Scheme != "https":
			return nil, fmt.Errorf("hostAliases: %s → %q: the target must be an http:// or https:// URL", from, to)
		case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
			return nil, fmt.Errorf("hostAliases: %s → %q: the target is a scheme, host and port only", from, to)
		case u.Port() == "":
			return nil, fmt.Errorf("hostAliases: %s → %q: the target needs a port", from, to)
		case !loopbackHost(u.Hostname()):
			return nil, fmt.Errorf("hostAliases: %s → %q: the target must be a loopback address (127.0.0.0/8, ::1 or localhost)", from, to)
		}
		out[key] = &url.URL{Scheme: u.Scheme, Host: u.Host}
	}
	return out, nil
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// Target returns the scheme and host a request to u goes to instead, or
// nil when no alias covers u. "host:port" keys match u's port, the
// scheme's default port filled in; a "host" key matches only a URL that
// names no port.
func (a Aliases) Target(u *url.URL) *url.URL {
	if len(a) == 0 {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	host := strings.ToLower(u.Hostname())
	if to, ok := a[net.JoinHostPort(host, port)]; ok {
		return to
	}
	if u.Port() == "" {
		return a[host]
	}
	return nil
}

// Apply returns u itself, or a copy with the scheme and host of its
// alias.
func (a Aliases) Apply(u *url.URL) *url.URL {
	to := a.Target(u)
	if to == nil {
		return u
	}
	out := *u
	out.Scheme, out.Host = to.Scheme, to.Host
	return &out
}

// IsTarget reports whether host:port is an alias's target: the dialler
// lets it be loopback.
func (a Aliases) IsTarget(host, port string) bool {
	for _, to := range a {
		if strings.EqualFold(to.Hostname(), strings.Trim(host, "[]")) && to.Port() == port {
			return true
		}
	}
	return false
}

// List describes the aliases for logs and reports: "from → to", sorted.
func (a Aliases) List() []string {
	out := make([]string, 0, len(a))
	for from, to := range a {
		out = append(out, from+" → "+to.String())
	}
	sort.Strings(out)
	return out
}
