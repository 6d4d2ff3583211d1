// Package hosthttp lets guest code use a plain *http.Client: requests go
// through the host's HTTP function (http_do_bin, or http_do on a Host
// without it; see provider.DoHTTP), where the host's policy applies. It
// is a package of its own so that providers that make no HTTP calls do not
// link net/http into their module.
//
// The sandbox has no sockets: Go's net package on wasip1 is an in-process
// fake network, where a dial of any address fails with "connect:
// Connection refused" however reachable the server is. Linking this
// package therefore makes Transport net/http's DefaultTransport, so that
// http.DefaultClient, and every SDK that falls back to it when given no
// client (oauth2.NewClient, godo.NewFromToken), sends through the host. A
// provider that imports no other part of it links it with
//
//	import _ "github.com/wasmprov/wasmprov/guests/go/hosthttp"
//
// An SDK that builds an *http.Transport of its own still dials the fake
// network: give it Client() or Transport. Outside wasip1 (the same code
// run in-process by runtime/native) the default transport is left alone:
// it is the host process's.
package hosthttp

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// Transport is an http.RoundTripper that sends requests through the host's
// HTTP function (provider.DoHTTP), so a plain *http.Client — and cloud SDKs built on one —
// work inside the sandbox. The host applies its policy (allowed hosts,
// size limits, the call's deadline). The request's context must be (or
// derive from) the context the SDK passed to the provider method. Needs
// abi.CapHTTP.
var Transport http.RoundTripper = transport{}

// Client returns an *http.Client using Transport.
func Client() *http.Client { return &http.Client{Transport: Transport} }

type transport struct{}

func (transport) RoundTrip(r *http.Request) (*http.Response, error) {
	req := abi.HTTPRequest{Method: r.Method, URL: r.URL.String(), Header: r.Header}
	if r.Method == "" {
		req.Method = http.MethodGet
	}
	if r.Body != nil {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = body
	}
	if r.Host != "" && r.Host != r.URL.Host {
		req.Header = r.Header.Clone()
		if req.Header == nil {
			req.Header = http.Header{}
		}
		req.Header["Host"] = []string{r.Host}
	}
	// DoHTTP picks the framing: http_do_bin's binary frames where the host
	// has it, http_do's JSON otherwise.
	resp, err := provider.DoHTTP(r.Context(), req)
	if err != nil {
		return nil, err
	}
	return &http.Response{
		Status:        strconv.Itoa(resp.Status) + " " + http.StatusText(resp.Status),
		StatusCode:    resp.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header(resp.Header),
		Body:          io.NopCloser(bytes.NewReader(resp.Body)),
		ContentLength: int64(len(resp.Body)),
		Request:       r,
	}, nil
}
