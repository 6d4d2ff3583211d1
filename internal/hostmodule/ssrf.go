package hostmodule

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Resolver resolves host names for http_do. *net.Resolver implements it;
// tests substitute a stub to prove the address rules without DNS.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// internalPrefixes are address ranges a guest may not reach unless the
// policy names the host: they lead to the controller's own node, its
// cluster network or the cloud's metadata service rather than a cloud API.
var internalPrefixes = func() []struct {
	p      netip.Prefix
	reason string
} {
	list := []struct{ cidr, reason string }{
		{"0.0.0.0/8", "unspecified (this network)"},
		{"10.0.0.0/8", "private"},
		{"100.64.0.0/10", "shared address space (CGNAT)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local (cloud metadata)"},
		{"172.16.0.0/12", "private"},
		{"192.0.0.0/24", "IETF protocol assignments"},
		{"192.168.0.0/16", "private"},
		{"198.18.0.0/15", "benchmarking"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"},
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"64:ff9b::/96", "NAT64 (embeds an IPv4 address)"},
		{"64:ff9b:1::/48", "NAT64 (local use)"},
		{"2002::/16", "6to4 (embeds an IPv4 address)"},
		{"fc00::/7", "private (unique local)"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local"},
		{"ff00::/8", "multicast"},
	}
	out := make([]struct {
		p      netip.Prefix
		reason string
	}, len(list))
	for i, e := range list {
		out[i].p, out[i].reason = netip.MustParsePrefix(e.cidr), e.reason
	}
	return out
}()

// internalAddr reports why a is not a public unicast address, or "".
func internalAddr(a netip.Addr) string {
	a = a.Unmap() // ::ffff:169.254.169.254 is 169.254.169.254
	if !a.IsValid() {
		return "invalid"
	}
	for _, e := range internalPrefixes {
		if e.p.Contains(a) {
			return e.reason
		}
	}
	return ""
}

// internalAllowed reports whether the policy names host:port as one that
// may live at an internal address: an AllowInternalHosts entry, or an
// AllowedHosts entry that is that very IP literal.
func (p *HTTPPolicy) internalAllowed(host, port string) bool {
	host = strings.ToLower(strings.Trim(host, "[]"))
	if p.hostAliases.IsTarget(host, port) {
		return true // loopback by construction (hostalias.Parse)
	}
	// The request's port was checked against AllowedHosts (Allow) before
	// any dial, so here a pattern without a port matches the dialled one.
	for _, pattern := range p.AllowInternalHosts {
		if matchHost(pattern, host, port, port) {
			return true
		}
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return false
	}
	for _, pattern := range p.AllowedHosts {
		if !strings.HasPrefix(pattern, "*.") && matchHost(pattern, host, port, port) {
			return true
		}
	}
	return false
}

// dialContext resolves addr itself, refuses internal addresses the policy
// does not allow for that host, and connects to a checked IP literal, so
// the address checked is the address connected to (no DNS rebinding
// window). It runs for every connection: the first request's, and every
// redirect's.
func (h *HTTP) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	p := &h.policy
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	internalOK := p.internalAllowed(host, port)
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = p.Resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
	}
	var allowed []netip.Addr
	var refused []string
	for _, a := range addrs {
		if reason := internalAddr(a); reason != "" && !internalOK {
			refused = append(refused, a.String()+" is "+reason)
			continue
		}
		allowed = append(allowed, a.Unmap())
	}
	if len(allowed) == 0 {
		if len(refused) == 0 {
			return nil, fmt.Errorf("%s has no addresses", host)
		}
		return nil, &deniedError{fmt.Sprintf("host %s resolves to an address the policy does not allow (%s)",
			host, strings.Join(refused, ", "))}
	}
	d := net.Dialer{
		Timeout: 30 * time.Second,
		// Belt and braces: the socket's peer is checked again just before
		// connect, whatever path led here.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &deniedError{"unparsable connect address " + address}
			}
			if reason := internalAddr(ap.Addr()); reason != "" && !internalOK {
				return &deniedError{fmt.Sprintf("connect to %s refused: %s", address, reason)}
			}
			return nil
		},
	}
	var firstErr error
	for _, a := range allowed {
		c, err := d.DialContext(ctx, network, netip.AddrPortFrom(a, portNum(port)).String())
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

func portNum(s string) uint16 {
	var n uint16
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + uint16(c-'0')
	}
	return n
}

// newTransport builds the policy's hardened transport: no proxy (a proxy
// would hide the destination from the address check), the checking
// dialer, the response header cap, and the policy's TLS config. NewHTTP
// calls it once per policy.
func (h *HTTP) newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            h.dialContext,
		TLSClientConfig:        h.policy.TLSConfig,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           16,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        30 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  1 * time.Second,
		ResponseHeaderTimeout:  h.policy.Timeout,
		MaxResponseHeaderBytes: int64(h.policy.MaxHeaderBytes),
	}
}

// sensitiveHeader reports whether a header's value must not be logged.
func sensitiveHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "authorization", "proxy-authorization", "cookie", "set-cookie":
		return true
	}
	for _, s := range []string{"token", "secret", "key", "auth", "password", "session", "credential", "signature"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// redactHeader returns h for logging, sensitive values replaced.
func redactHeader(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, vs := range h {
		if sensitiveHeader(k) {
			out[k] = "REDACTED"
			continue
		}
		out[k] = strings.Join(vs, ", ")
	}
	return out
}
