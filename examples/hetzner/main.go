// Command hetzner is machine-controller's Hetzner Cloud provider as a
// wasmprov guest, built on the standard library only (encoding/json over
// the host's HTTP, without net/http). See README.md.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o hetzner.wasm .
package main

import (
	"context"

	"github.com/wasmprov/wasmprov/examples/hetzner/hzprovider"
	"github.com/wasmprov/wasmprov/examples/hetzner/hzrest"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

func init() { hzprovider.Register(hzrest.New(hostDoer{})) }

func main() {}

// hostDoer sends hzrest's requests through the host's http_do
// (provider.DoHTTP), where the host's policy applies: the light way, which
// keeps net/http — several megabytes of the module — out of the guest.
type hostDoer struct{}

func (hostDoer) Do(ctx context.Context, r *hzrest.Request) (*hzrest.Response, error) {
	resp, err := provider.DoHTTP(ctx, provider.HTTPRequest{Method: r.Method, URL: r.URL, Header: r.Header, Body: r.Body})
	if err != nil {
		return nil, err
	}
	return &hzrest.Response{Status: resp.Status, Header: resp.Header, Body: resp.Body}, nil
}
