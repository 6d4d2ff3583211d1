package hostmodule

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
)

// TestHTTPDoBinThroughMemory drives http_do_bin as a guest does, through
// its wasm binding on a linear memory: the frame is read from memory, a
// result within limit is written into the buffer, a longer one is left
// pending and taken with take_result (SPEC §5.1).
func TestHTTPDoBinThroughMemory(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 80<<10/16) // 80 KiB, past the guest's buffer
	var seen *http.Request
	var seenBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Clone(context.Background())
		seenBody, _ = io.ReadAll(r.Body)
		w.Header()["X-Multi"] = []string{"one", "two"}
		w.WriteHeader(http.StatusCreated)
		if r.URL.Path == "/big" {
			w.Write(big)
			return
		}
		w.Write([]byte("small"))
	}))
	defer srv.Close()
	env := &Env{Provider: "test", Logger: slog.New(slog.DiscardHandler),
		HTTP: NewHTTP(HTTPPolicy{AllowedHosts: []string{hostPort(t, srv.URL)}, AllowInsecure: true})}
	defer env.Close()
	fn, take := hostFunction(t, abi.ImportHTTPBin), hostFunction(t, abi.ImportTakeResult)

	const reqAt, bufAt, limit = 0, 64 << 10, 16 << 10
	run := func(t *testing.T, req abi.HTTPRequest) *abi.HTTPResponse {
		t.Helper()
		c := NewCall(context.Background(), env, abi.MethodCreate, abi.CapHTTP)
		defer c.Release()
		ctx := WithCall(context.Background(), c)
		mem := &flatMemory{b: make([]byte, 256<<10)}
		frame := abi.AppendHTTPRequestFrame(nil, &req)
		copy(mem.b[reqAt:], frame)
		stack := []uint64{reqAt, uint64(len(frame)), bufAt, limit}
		fn.Fn(ctx, mem, stack)
		n := int64(stack[0])
		if n < 0 {
			t.Fatalf("http_do_bin: %s", abi.Errno(n))
		}
		out := mem.b[bufAt : bufAt+n]
		if n > limit {
			// Pending: nothing was written; take it into a buffer that fits.
			if !bytes.Equal(mem.b[bufAt:bufAt+limit], make([]byte, limit)) {
				t.Error("a pending result was written into the short buffer")
			}
			stack = []uint64{bufAt, uint64(n)}
			take.Fn(ctx, mem, stack)
			if int64(stack[0]) != n {
				t.Fatalf("take_result answered %d, want %d", int64(stack[0]), n)
			}
		}
		resp, err := abi.ParseHTTPResponseFrame(out)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	resp := run(t, abi.HTTPRequest{Method: "POST", URL: srv.URL + "/small?q=1",
		Header: map[string][]string{"Authorization": {"Bearer t"}, "accept": {"a", "b"}, "Host": {"evil.example"}},
		Body:   []byte("payload")})
	if resp.Status != 201 || string(resp.Body) != "small" {
		t.Errorf("got %d %q", resp.Status, resp.Body)
	}
	if got := resp.Header["X-Multi"]; len(got) != 2 || got[0] != "one" || got[1] != "two" {
		t.Errorf("X-Multi %v, want both values in order", got)
	}
	if seen.Method != "POST" || seen.URL.RawQuery != "q=1" || string(seenBody) != "payload" {
		t.Errorf("server saw %s ?%s %q", seen.Method, seen.URL.RawQuery, seenBody)
	}
	if seen.Header.Get("Authorization") != "Bearer t" || len(seen.Header["Accept"]) != 2 {
		t.Errorf("server saw header %v", seen.Header)
	}
	if seen.Host != hostPort(t, srv.URL) {
		t.Errorf("server saw Host %q: the guest's Host header must be ignored", seen.Host)
	}

	resp = run(t, abi.HTTPRequest{Method: "GET", URL: srv.URL + "/big"})
	if !bytes.Equal(resp.Body, big) {
		t.Errorf("big body: %d bytes, want %d", len(resp.Body), len(big))
	}
}

// TestHTTPUsesCountedAcrossFramings: http_do and http_do_bin draw on one
// per-call cap.
func TestHTTPUsesCountedAcrossFramings(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	env := &Env{Provider: "test", Logger: slog.New(slog.DiscardHandler), Limits: Limits{MaxHTTPRequestsPerCall: 3},
		HTTP: NewHTTP(HTTPPolicy{AllowedHosts: []string{hostPort(t, srv.URL)}, AllowInsecure: true})}
	defer env.Close()
	req := abi.HTTPRequest{Method: "GET", URL: srv.URL}
	c := NewCall(context.Background(), env, abi.MethodGet, abi.CapHTTP)
	defer c.Release()
	jsonReq := []byte(`{"method":"GET","url":"` + srv.URL + `"}`)
	for i, fn := range []string{abi.ImportHTTP, abi.ImportHTTPBin, abi.ImportHTTP} {
		b := jsonReq
		if fn == abi.ImportHTTPBin {
			b = abi.AppendHTTPRequestFrame(nil, &req)
		}
		if _, err := c.Invoke(fn, b); err != nil {
			t.Fatalf("request %d (%s): %v", i, fn, err)
		}
	}
	_, err := c.Invoke(abi.ImportHTTPBin, abi.AppendHTTPRequestFrame(nil, &req))
	e, ok := err.(*Error)
	if !ok || e.Errno != abi.ErrnoTooLarge {
		t.Fatalf("the fourth request answered %v, want TOO_LARGE", err)
	}
}
