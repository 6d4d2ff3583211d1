package hostfuncs

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
)

// BenchmarkHTTPDo measures one http_do through the policy, the checking
// transport and a kept-alive loopback connection: the host's own cost per
// request, which a provider polling its cloud pays hundreds of times a call.
func BenchmarkHTTPDo(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	env := &Env{Provider: "bench", Logger: slog.New(slog.DiscardHandler),
		HTTP: NewHTTP(HTTPPolicy{AllowedHosts: []string{srv.Listener.Addr().String()}, AllowInsecure: true})}
	defer env.Close()
	req, _ := json.Marshal(abi.HTTPRequest{Method: "GET", URL: srv.URL + "/"})
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			if _, err := NewCall(context.Background(), env, abi.MethodGet, abi.CapHTTP).Invoke(abi.ImportHTTP, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := NewCall(context.Background(), env, abi.MethodGet, abi.CapHTTP).Invoke(abi.ImportHTTP, req); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
