// Package nethttp is an hzrest.Doer over net/http, for using hzrest
// natively (tests, tools). The guest does not use it: there the host's
// http_do is the transport (examples/hetzner/main.go), and net/http would
// only make the module larger.
package nethttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/wasmprov/wasmprov/examples/hetzner/hzrest"
)

// Doer sends hzrest requests with Client (nil: http.DefaultClient).
type Doer struct{ Client *http.Client }

var _ hzrest.Doer = Doer{}

// Do implements hzrest.Doer.
func (d Doer) Do(ctx context.Context, r *hzrest.Request) (*hzrest.Response, error) {
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, body)
	if err != nil {
		return nil, err
	}
	for k, v := range r.Header {
		req.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), v...)
	}
	c := d.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return nil, ue.Err // hzrest names the request itself
	} else if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading answer: %w", err)
	}
	return &hzrest.Response{Status: resp.StatusCode, Header: hzrest.Header(resp.Header), Body: b}, nil
}
