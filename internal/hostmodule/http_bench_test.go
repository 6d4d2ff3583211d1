package hostmodule

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
)

// benchResponse is a cloud API answer the size of the bench module's fake
// cloud (bench/internal/fakecloud): a small JSON document.
var benchResponse = []byte(`{"server":{"id":4711,"name":"md-hel1-workers-7c9f8d6b5-x2k4p","status":"initializing","public_net":{"ipv4":{"ip":"203.0.113.7"}}},"action":{"id":1,"status":"running"}}`)

// BenchmarkHTTPDo measures one request through the policy, the checking
// transport and a kept-alive loopback connection — the host's own cost per
// request, which a provider polling its cloud pays hundreds of times a
// call — next to the same request made natively with a plain
// http.Client, in the same run:
//
//	native       http.Client.Do + reading the body: the floor
//	http_do      the JSON framing (decode the request, encode the result with a base64 body)
//	http_do_bin  the binary framing
//
// The host's overhead per request is http_do(_bin) − native. The guest's
// side (encoding the request, decoding the result) is not in these
// figures; bench/ measures whole calls.
func BenchmarkHTTPDo(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			io.Copy(io.Discard, r.Body)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(benchResponse)
	}))
	defer srv.Close()
	env := &Env{Provider: "bench", Logger: slog.New(slog.DiscardHandler),
		HTTP: NewHTTP(HTTPPolicy{AllowedHosts: []string{srv.Listener.Addr().String()}, AllowInsecure: true})}
	defer env.Close()
	body := []byte(`{"image":161547269,"labels":{"machine-uid":"c0ffee"},"location":"hel1","name":"md-hel1-workers-7c9f8d6b5-x2k4p","server_type":22}`)
	req := abi.HTTPRequest{Method: "POST", URL: srv.URL + "/servers",
		Header: map[string][]string{"Authorization": {"Bearer benchmark-token"}, "Content-Type": {"application/json"}},
		Body:   body}
	reqJSON, _ := json.Marshal(req)
	reqFrame := abi.AppendHTTPRequestFrame(nil, &req)

	native := &http.Client{Transport: &http.Transport{}}
	defer native.CloseIdleConnections()
	b.Run("native", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hreq, _ := http.NewRequestWithContext(context.Background(), req.Method, req.URL, bytes.NewReader(body))
			hreq.Header = http.Header(req.Header).Clone()
			resp, err := native.Do(hreq)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadAll(resp.Body); err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
	})
	for _, fn := range []struct {
		name string
		req  []byte
	}{{abi.ImportHTTP, reqJSON}, {abi.ImportHTTPBin, reqFrame}} {
		b.Run(fn.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c := NewCall(context.Background(), env, abi.MethodGet, abi.CapHTTP)
				if _, err := c.Invoke(fn.name, fn.req); err != nil {
					b.Fatal(err)
				}
				c.Release()
			}
		})
	}
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c := NewCall(context.Background(), env, abi.MethodGet, abi.CapHTTP)
				if _, err := c.Invoke(abi.ImportHTTPBin, reqFrame); err != nil {
					b.Error(err)
					return
				}
				c.Release()
			}
		})
	})
}
