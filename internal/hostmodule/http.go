package hostmodule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/ratelimit"
)

// HTTP is the outbound HTTP of one provider version: its policy, with the
// defaults applied, and the hardened transport and the client built once
// from it. Every request of the version shares them, so connections are
// kept alive across calls and the request path takes no lock. It is safe
// for concurrent use.
type HTTP struct {
	policy HTTPPolicy
	// transport is the hardened transport the connect-time checks live in;
	// client sends through it, or through the policy's WrapTransport
	// around it.
	transport *http.Transport
	client    *http.Client
}

// NewHTTP applies p's defaults and builds the transport and client that
// every request governed by p uses. The host lists and the TLS config are
// copied: changing p's afterwards does not change the policy of requests.
// Close releases the idle connections.
func NewHTTP(p HTTPPolicy) *HTTP {
	p = p.withDefaults()
	p.AllowedHosts = slices.Clone(p.AllowedHosts)
	p.AllowInternalHosts = slices.Clone(p.AllowInternalHosts)
	if p.TLSConfig != nil {
		p.TLSConfig = p.TLSConfig.Clone()
	}
	h := &HTTP{policy: p}
	h.transport = h.newTransport()
	var rt http.RoundTripper = h.transport
	if p.WrapTransport != nil {
		rt = p.WrapTransport(rt)
	}
	h.client = &http.Client{Transport: rt, CheckRedirect: h.checkRedirect}
	return h
}

// Limiter returns the policy's limiter (nil: unpaced).
func (h *HTTP) Limiter() *ratelimit.Limiter {
	if h == nil {
		return nil
	}
	return h.policy.Limiter
}

// Close drops the connections kept alive for this policy, e.g. when its
// provider version is closed or replaced: it must not hold connections to
// the cloud's API open until the server times them out. Requests in flight
// keep theirs. Close is idempotent; a nil *HTTP does nothing. Only the
// hardened transport's connections are dropped: a WrapTransport wrapper's
// round tripper belongs to the embedder, who may share it between
// providers.
func (h *HTTP) Close() {
	if h == nil {
		return
	}
	h.transport.CloseIdleConnections()
}

// checkRedirect caps the redirects and puts every target through the
// policy again; the dialer checks its addresses when it connects.
func (h *HTTP) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > h.policy.MaxRedirects {
		return &deniedError{fmt.Sprintf("more than %d redirects", h.policy.MaxRedirects)}
	}
	if err := h.policy.Allow(req.URL); err != nil {
		return fmt.Errorf("redirect to %s: %w", redactURL(req.URL), err)
	}
	// The client sends req as it is on return: a redirect to an aliased
	// host goes to the alias too.
	req.URL = h.policy.hostAliases.Apply(req.URL)
	return nil
}

// denyAllHTTP governs http_do for an Env without HTTP: it allows no host.
var denyAllHTTP = NewHTTP(HTTPPolicy{})

// httpDo is http_do: the request and the result are JSON documents with
// base64 bodies (SPEC §6.3).
func httpDo(ctx context.Context, c *Call, reqJSON []byte) ([]byte, error) {
	var req abi.HTTPRequest
	if err := json.Unmarshal(reqJSON, &req); err != nil {
		return nil, errorf(abi.ErrnoInvalid, "http_do request is not valid JSON: %v", err)
	}
	resp, err := sendHTTP(ctx, c, &req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}

// httpDoBin is http_do_bin: the same request as http_do, framed in binary
// (abi.ParseHTTPRequestFrame) so that neither side encodes JSON or base64.
// Everything after the parse is http_do's code.
func httpDoBin(ctx context.Context, c *Call, frame []byte) ([]byte, error) {
	req, err := abi.ParseHTTPRequestFrame(frame)
	if err != nil {
		return nil, errorf(abi.ErrnoInvalid, "http_do_bin request: %v", err)
	}
	resp, err := sendHTTP(ctx, c, req)
	if err != nil {
		return nil, err
	}
	return abi.AppendHTTPResponseFrame(make([]byte, 0, abi.HTTPResponseFrameSize(resp)), resp), nil
}

// sendHTTP performs an outbound HTTP request for the guest with the host's
// client, after the policy allowed the URL and the request passed its
// bounds. The request is bound to the call's context, so a cancelled or
// timed-out call aborts it. It is the one implementation behind http_do
// and http_do_bin, which differ only in how they frame req and the result.
func sendHTTP(ctx context.Context, c *Call, req *abi.HTTPRequest) (*abi.HTTPResponse, error) {
	h := c.Env.HTTP
	if h == nil {
		h = denyAllHTTP
	}
	p := &h.policy
	u, err := url.Parse(req.URL)
	if err != nil {
		return nil, errorf(abi.ErrnoInvalid, "invalid URL %q: %v", req.URL, err)
	}
	if err := p.Allow(u); err != nil {
		c.logger().Warn("http request denied by policy", "url", redactURL(u), "reason", err.Error())
		return nil, errorf(abi.ErrnoDenied, "%v", err)
	}
	if int64(len(req.Body)) > p.MaxRequestBodyBytes {
		return nil, errorf(abi.ErrnoTooLarge, "request body of %d bytes exceeds the limit of %d", len(req.Body), p.MaxRequestBodyBytes)
	}
	headerBytes, headerCount := 0, 0
	for k, vs := range req.Header {
		headerCount += len(vs)
		for _, v := range vs {
			headerBytes += len(k) + len(v) + 4
		}
	}
	if headerCount > p.MaxHeaders {
		return nil, errorf(abi.ErrnoTooLarge, "%d request header fields exceed the limit of %d", headerCount, p.MaxHeaders)
	}
	if headerBytes > p.MaxHeaderBytes {
		return nil, errorf(abi.ErrnoTooLarge, "request headers of %d bytes exceed the limit of %d", headerBytes, p.MaxHeaderBytes)
	}
	// The wait counts against the call's deadline, not the request's own
	// timeout: a request that cannot leave before the call ends is not
	// sent at all.
	if l := p.Limiter; l != nil {
		waited, err := l.Wait(ctx)
		if err != nil {
			// DEBUG: a guest looping while throttled would otherwise write
			// a host line per attempt; the refusals are counted in the
			// provider's metrics, and the call's error says why.
			c.logger().Debug("http request not sent: rate limited", "method", req.Method, "url", redactURL(u),
				"waited", waited, "reason", err.Error())
			return nil, errorf(abi.ErrnoFailed, "%s %s: %v", req.Method, redactURL(u), err)
		}
		if waited > 0 {
			c.logger().Debug("http request paced", "method", req.Method, "url", redactURL(u), "waited", waited)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	var body io.Reader = http.NoBody
	if len(req.Body) > 0 {
		body = bytes.NewReader(req.Body)
	}
	hreq, err := http.NewRequestWithContext(ctx, req.Method, p.hostAliases.Apply(u).String(), body)
	if err != nil {
		return nil, errorf(abi.ErrnoInvalid, "building request: %v", err)
	}
	for k, vs := range req.Header {
		if strings.EqualFold(k, "Host") {
			continue // the host decides which host it talks to
		}
		// Appended, not assigned: "authorization" and "Authorization" are
		// one field, and neither spelling may silently drop the other.
		ck := http.CanonicalHeaderKey(k)
		hreq.Header[ck] = append(hreq.Header[ck], vs...)
	}
	start := time.Now()
	resp, err := h.client.Do(hreq)
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
	if l := p.Limiter; l != nil {
		l.Observe(resp.StatusCode, resp.Header)
	}
	max := p.MaxResponseBytes
	rbody, err := readBody(resp, max)
	if err != nil {
		return nil, errorf(abi.ErrnoFailed, "%s %s: reading response: %v", req.Method, redactURL(u), err)
	}
	if int64(len(rbody)) > max {
		return nil, errorf(abi.ErrnoTooLarge, "%s %s: response body exceeds the limit of %d bytes", req.Method, redactURL(u), max)
	}
	if l := c.logger(); l.Enabled(ctx, slog.LevelDebug) {
		l.Debug("http request", "method", req.Method, "url", redactURL(u), "status", resp.StatusCode,
			"header", redactHeader(hreq.Header), "duration", time.Since(start))
	}
	return &abi.HTTPResponse{Status: resp.StatusCode, Header: resp.Header, Body: rbody}, nil
}

// readBody reads at most max+1 bytes of resp's body, so a caller can tell
// a body past the limit. A declared Content-Length within the limit sizes
// the buffer once instead of growing it — up to 1 MiB: a server that
// announces more than it sends must not make the host allocate for it.
func readBody(resp *http.Response, max int64) ([]byte, error) {
	r := io.LimitReader(resp.Body, max+1)
	if n := resp.ContentLength; n >= 0 && n <= max {
		buf := bytes.NewBuffer(make([]byte, 0, min(n, 1<<20)+1))
		_, err := buf.ReadFrom(r)
		return buf.Bytes(), err
	}
	return io.ReadAll(r)
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

// redactURL drops user info and the query (which may carry tokens) for logs.
func redactURL(u *url.URL) string {
	r := *u
	r.User = nil
	if r.RawQuery != "" {
		r.RawQuery = "REDACTED"
	}
	return r.String()
}
