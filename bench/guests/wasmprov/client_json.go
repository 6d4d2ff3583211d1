//go:build benchjsonhttp

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// httpClient sends through http_do with JSON and base64 on both sides, as
// hosthttp did before http_do_bin: the baseline of
// BenchmarkCreateHTTPFraming.
func httpClient() *http.Client { return &http.Client{Transport: jsonTransport{}} }

type jsonTransport struct{}

func (jsonTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	req := abi.HTTPRequest{Method: r.Method, URL: r.URL.String(), Header: r.Header}
	if r.Body != nil {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = body
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	out, err := provider.HostCall(r.Context(), abi.ImportHTTP, b)
	if err != nil {
		return nil, err
	}
	var resp abi.HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("decoding host http response: %w", err)
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
