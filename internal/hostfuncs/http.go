package hostfuncs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wasmprov/wasmprov/abi"
)

const (
	defaultMaxResponseBytes    = 16 << 20
	defaultMaxRequestBodyBytes = 4 << 20
	defaultMaxRedirects        = 5
	defaultMaxHeaders          = 64
	defaultMaxHeaderBytes      = 64 << 10
	defaultHTTPTimeout         = 60 * time.Second
)

func (p *HTTPPolicy) timeout() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return defaultHTTPTimeout
}

func (p *HTTPPolicy) maxHeaderBytes() int {
	if p.MaxHeaderBytes > 0 {
		return p.MaxHeaderBytes
	}
	return defaultMaxHeaderBytes
}

// httpDo performs an outbound HTTP request for the guest with the host's
// client, after the policy allowed the URL. The request is bound to the
// call's context, so a cancelled or timed-out call aborts it.
func httpDo(ctx context.Context, c *Call, reqJSON []byte) ([]byte, error) {
	var req abi.HTTPRequest
	if err := json.Unmarshal(reqJSON, &req); err != nil {
		return nil, errorf(abi.ErrnoInvalid, "http_do request is not valid JSON: %v", err)
	}
	p := &c.Env.HTTP
	u, err := url.Parse(req.URL)
	if err != nil {
		return nil, errorf(abi.ErrnoInvalid, "invalid URL %q: %v", req.URL, err)
	}
	if err := p.Allow(u); err != nil {
		c.logger().Warn("http request denied by policy", "url", redactURL(u), "reason", err.Error())
		return nil, errorf(abi.ErrnoDenied, "%v", err)
	}
	maxBody := p.MaxRequestBodyBytes
	if maxBody <= 0 {
		maxBody = defaultMaxRequestBodyBytes
	}
	if int64(len(req.Body)) > maxBody {
		return nil, errorf(abi.ErrnoTooLarge, "request body of %d bytes exceeds the limit of %d", len(req.Body), maxBody)
	}
	maxHeaders := p.MaxHeaders
	if maxHeaders <= 0 {
		maxHeaders = defaultMaxHeaders
	}
	headerBytes, headerCount := 0, 0
	for k, vs := range req.Header {
		headerCount += len(vs)
		for _, v := range vs {
			headerBytes += len(k) + len(v) + 4
		}
	}
	if headerCount > maxHeaders {
		return nil, errorf(abi.ErrnoTooLarge, "%d request header fields exceed the limit of %d", headerCount, maxHeaders)
	}
	if headerBytes > p.maxHeaderBytes() {
		return nil, errorf(abi.ErrnoTooLarge, "request headers of %d bytes exceed the limit of %d", headerBytes, p.maxHeaderBytes())
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout())
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, req.Method, u.String(), bytes.NewReader(req.Body))
	if err != nil {
		return nil, errorf(abi.ErrnoInvalid, "building request: %v", err)
	}
	for k, vs := range req.Header {
		if strings.EqualFold(k, "Host") {
			continue // the host decides which host it talks to
		}
		hreq.Header[http.CanonicalHeaderKey(k)] = vs
	}
	start := time.Now()
	resp, err := p.client().Do(hreq)
	if err != nil {
		var denied *deniedError
		if errors.As(err, &denied) {
			c.logger().Warn("http request denied by policy", "method", req.Method, "url", redactURL(u),
				"reason", denied.Error())
			return nil, errorf(abi.ErrnoDenied, "%v", denied)
		}
		c.logger().Debug("http request failed", "method", req.Method, "url", redactURL(u),
			"header", redactHeader(hreq.Header), "error", redactError(err))
		return nil, errorf(abi.ErrnoFailed, "%s %s: %v", req.Method, redactURL(u), redactError(err))
	}
	defer resp.Body.Close()
	max := p.MaxResponseBytes
	if max <= 0 {
		max = defaultMaxResponseBytes
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, errorf(abi.ErrnoFailed, "%s %s: reading response: %v", req.Method, redactURL(u), err)
	}
	if int64(len(body)) > max {
		return nil, errorf(abi.ErrnoTooLarge, "%s %s: response body exceeds the limit of %d bytes", req.Method, redactURL(u), max)
	}
	c.logger().Debug("http request", "method", req.Method, "url", redactURL(u), "status", resp.StatusCode,
		"header", redactHeader(hreq.Header), "duration", time.Since(start))
	return json.Marshal(abi.HTTPResponse{Status: resp.StatusCode, Header: resp.Header, Body: body})
}

// redactError drops the query of a URL inside a *url.Error.
func redactError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			return &url.Error{Op: ue.Op, URL: redactURL(u), Err: ue.Err}
		}
	}
	return err
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

func (p *HTTPPolicy) client() *http.Client {
	var c http.Client
	c.Transport = p.transport()
	if p.WrapTransport != nil {
		c.Transport = p.WrapTransport(c.Transport)
	}
	maxRedirects := p.MaxRedirects
	if maxRedirects <= 0 {
		maxRedirects = defaultMaxRedirects
	}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return &deniedError{fmt.Sprintf("more than %d redirects", maxRedirects)}
		}
		if err := p.Allow(req.URL); err != nil {
			return fmt.Errorf("redirect to %s: %w", redactURL(req.URL), err)
		}
		return nil
	}
	return &c
}

// redactURL drops user info and the query (which may carry tokens) for logs.
func redactURL(u *url.URL) string {
	r := *u
	r.User = nil
	if r.RawQuery != "" {
		r.RawQuery = "REDACTED"
	}
	return r.String()
}
