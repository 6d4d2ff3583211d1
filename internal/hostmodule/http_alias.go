package hostmodule

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"sort"
	"strings"
)

// A host alias sends the requests a guest makes to one host to a loopback
// address instead: an unmodified provider keeps calling
// https://api.hetzner.cloud/v1 and reaches a simulator on 127.0.0.1. The
// guest's URL is checked against the policy as the guest wrote it; the
// rewrite happens after, so an alias never widens what a guest may name.
// Targets are loopback only: an alias to anywhere else would be a way
// round the address checks, configured or not.

// ParseHostAliases checks aliases (host or host:port → a URL such as
// "http://127.0.0.1:8080") and returns them keyed by lower-case host:port,
// the scheme's default port filled in later by the request's. A target
// must be http or https on a loopback IP literal or "localhost", with a
// port, and nothing else (no user, path, query or fragment).
func ParseHostAliases(aliases map[string]string) (map[string]*url.URL, error) {
	if len(aliases) == 0 {
		return nil, nil
	}
	out := make(map[string]*url.URL, len(aliases))
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

// aliased returns the URL a request to u is sent to: u itself, or a copy
// with the scheme and host of u's alias.
func (p *HTTPPolicy) aliased(u *url.URL) *url.URL {
	if len(p.hostAliases) == 0 {
		return u
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	host := strings.ToLower(u.Hostname())
	to, ok := p.hostAliases[net.JoinHostPort(host, port)]
	if !ok && u.Port() == "" {
		to, ok = p.hostAliases[host]
	}
	if !ok {
		return u
	}
	out := *u
	out.Scheme, out.Host = to.Scheme, to.Host
	return &out
}

// aliasTarget reports whether host:port is an alias's target: the dialer
// lets it be loopback.
func (p *HTTPPolicy) aliasTarget(host, port string) bool {
	for _, to := range p.hostAliases {
		if strings.EqualFold(to.Hostname(), strings.Trim(host, "[]")) && to.Port() == port {
			return true
		}
	}
	return false
}

// HostAliasList describes the aliases for logs and inspect: "from → to",
// sorted.
func HostAliasList(aliases map[string]*url.URL) []string {
	out := make([]string, 0, len(aliases))
	for from, to := range aliases {
		out = append(out, from+" → "+to.String())
	}
	sort.Strings(out)
	return out
}
