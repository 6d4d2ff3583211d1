package cassette

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

func server(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cr3t" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo-Token", "s3cr3t")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"path":"` + r.URL.Path + `","got":` + strings.TrimSpace(string(orNull(b))) + `,"bin":"\u0000"}`))
		w.Write([]byte{0xff}) // not UTF-8: stored as base64
	}))
	t.Cleanup(srv.Close)
	return srv
}

func orNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

func do(t *testing.T, rt http.RoundTripper, ctx context.Context, method, u, body string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer s3cr3t")
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b, nil
}

func TestRecordReplay(t *testing.T) {
	srv := server(t)
	canonical, _ := url.Parse("http://cloud.example.test")
	target, _ := url.Parse(srv.URL)
	record := func() ([]byte, [][]byte) {
		rec := &Recorder{Target: target, Canonical: canonical, Redact: Redaction{Secrets: []string{"s3cr3t"}}}
		var bodies [][]byte
		for i, path := range []string{"/v1/servers?token=abc&b=1", "/v1/servers/1"} {
			ctx := WithScope(context.Background(), []string{"create", "get"}[i])
			_, b, err := do(t, rec, ctx, "POST", canonical.String()+path, `{"name":"m1","n":1}`)
			if err != nil {
				t.Fatal(err)
			}
			bodies = append(bodies, b)
		}
		out, err := rec.Cassette().Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return out, bodies
	}
	first, liveBodies := record()
	second, _ := record()
	if !bytes.Equal(first, second) {
		t.Fatalf("two recordings differ:\n%s\n%s", first, second)
	}
	if bytes.Contains(first, []byte("s3cr3t")) || bytes.Contains(first, []byte("abc")) {
		t.Fatalf("secret leaked into cassette:\n%s", first)
	}
	if bytes.Contains(first, []byte(`"Date"`)) {
		t.Fatalf("volatile header recorded:\n%s", first)
	}
	path := filepath.Join(t.TempDir(), "c.json")
	if err := osWriteFile(path, first); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReplayer(c, Redaction{Secrets: []string{"s3cr3t"}})
	for i, path := range []string{"/v1/servers?b=1&token=zzz", "/v1/servers/1"} {
		ctx := WithScope(context.Background(), []string{"create", "get"}[i])
		resp, b, err := do(t, rep, ctx, "POST", canonical.String()+path, `{"n":1, "name":"m1"}`)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("status %d", resp.StatusCode)
		}
		// The live body contained the secret; the replayed one has it redacted
		// and is otherwise byte-for-byte the same.
		want := bytes.ReplaceAll(liveBodies[i], []byte("s3cr3t"), []byte(Redacted))
		if !bytes.Equal(b, want) {
			t.Fatalf("replayed body %q, want %q", b, want)
		}
	}
	if err := rep.CheckAll(); err != nil {
		t.Fatal(err)
	}
}

func TestMismatchDiff(t *testing.T) {
	c := &Cassette{Version: Version, Interactions: []Interaction{{
		Scope:    "s",
		Request:  Request{Method: "POST", URL: "http://x.test/v1/servers", Body: Body(`{"name":"a","type":"cx22","image":"ubuntu"}`)},
		Response: Response{Status: 201, Body: Body(`{}`)},
	}}}
	rep := NewReplayer(c, Redaction{})
	ctx := WithScope(context.Background(), "s")
	_, _, err := do(t, rep, ctx, "POST", "http://x.test/v1/servers", `{"name":"b","type":"cx22","image":"ubuntu"}`)
	var m *Mismatch
	if !errors.As(err, &m) {
		t.Fatalf("got %v, want a *Mismatch", err)
	}
	for _, want := range []string{`-   "name": "a",`, `+   "name": "b",`, `    "type": "cx22"`} {
		if !strings.Contains(m.Diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, m.Diff)
		}
	}
	err = rep.Check("s")
	if err == nil || !strings.Contains(err.Error(), "never requested") || !strings.Contains(err.Error(), "no recorded interaction") {
		t.Fatalf("Check = %v", err)
	}
	// Another scope sees nothing of s.
	if _, _, err := do(t, rep, context.Background(), "POST", "http://x.test/v1/servers", `{"name":"a","type":"cx22","image":"ubuntu"}`); err == nil {
		t.Fatal("request in another scope matched")
	}
}

func TestBodyRoundTrip(t *testing.T) {
	for _, b := range []Body{nil, Body("plain"), Body{0, 1, 0xff, 0xfe}} {
		c := &Cassette{Version: Version, Interactions: []Interaction{{Response: Response{Status: 200, Body: b}}}}
		out, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "c.json")
		if err := osWriteFile(path, out); err != nil {
			t.Fatal(err)
		}
		got, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Interactions[0].Response.Body, b) {
			t.Fatalf("body %q round-tripped as %q", b, got.Interactions[0].Response.Body)
		}
	}
}

func TestIgnoreFields(t *testing.T) {
	c := &Cassette{Version: Version, Interactions: []Interaction{{
		Request:  Request{Method: "POST", URL: "http://x.test/v1/ssh_keys", Body: Body(`{"name":"k-1234","public_key":"ssh-ed25519 AAAA1","labels":{"a":"b"}}`)},
		Response: Response{Status: 201, Body: Body(`{"ssh_key":{"id":1}}`)},
	}}}
	rep := NewReplayer(c, Redaction{}, Ignore{Method: "POST", Path: "/ssh_keys", Fields: []string{"name", "public_key"}})
	if _, _, err := do(t, rep, context.Background(), "POST", "http://x.test/v1/ssh_keys", `{"name":"k-9876","public_key":"ssh-ed25519 BBBB2","labels":{"a":"b"}}`); err != nil {
		t.Fatalf("ignored fields were compared: %v", err)
	}
	rep = NewReplayer(c, Redaction{}, Ignore{Method: "POST", Path: "/ssh_keys", Fields: []string{"name", "public_key"}})
	if _, _, err := do(t, rep, context.Background(), "POST", "http://x.test/v1/ssh_keys", `{"name":"k-9876","public_key":"x","labels":{"a":"c"}}`); err == nil {
		t.Fatal("a difference outside the ignored fields matched")
	}
}

// A recorder with a host alias sends a provider's requests for the real
// API host to a local server, and stores the URL the provider asked for,
// so the cassette replays with no alias at all.
func TestRecorderAliases(t *testing.T) {
	srv := server(t)
	target, _ := url.Parse(srv.URL)
	rec := &Recorder{Aliases: map[string]*url.URL{"api.example.com": target}, Redact: Redaction{Secrets: []string{"s3cr3t"}}}
	ctx := WithScope(context.Background(), "create/m1")
	resp, _, err := do(t, rec, ctx, "POST", "https://api.example.com/v2/droplets", `{"name":"m1"}`)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("status %d: the request did not reach the aliased server", resp.StatusCode)
	}
	// Another port of the host is not the alias's ("host" matches a URL
	// without a port only, as the runtime's policy aliases do).
	if _, _, err := do(t, rec, ctx, "GET", "https://api.example.com:8443/v2/droplets", ""); err == nil {
		t.Fatal("a request to another port of the aliased host was sent to the alias")
	}
	c := rec.Cassette()
	if got := c.Interactions[0].Request.URL; got != "https://api.example.com/v2/droplets" {
		t.Fatalf("the cassette stores %q, want the URL the provider asked for", got)
	}
	rep := NewReplayer(c, Redaction{Secrets: []string{"s3cr3t"}})
	if resp, _, err := do(t, rep, ctx, "POST", "https://api.example.com/v2/droplets", `{"name":"m1"}`); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("replay without an alias: %v", err)
	}
}

// Calls for two Machines recorded under their own scopes ("check/m1",
// "check/m2") replay in any order; replayed under one shared scope, the
// error says why the identical requests went astray, and Check of the
// check's scope covers its Machines' scopes.
func TestScopesPerMachine(t *testing.T) {
	req := Request{Method: "GET", URL: "http://x.test/v2/sizes"}
	c := &Cassette{Version: Version, Interactions: []Interaction{
		{Scope: "check/m1", Request: req, Response: Response{Status: 200, Body: Body(`{"for":"m1"}`)}},
		{Scope: "check/m2", Request: req, Response: Response{Status: 200, Body: Body(`{"for":"m2"}`)}},
		{Scope: "shared", Request: req, Response: Response{Status: 200, Body: Body(`{"for":"first"}`)}},
	}}
	rep := NewReplayer(c, Redaction{})
	for _, m := range []string{"m2", "m1"} {
		_, b, err := do(t, rep, WithScope(context.Background(), "check/"+m), "GET", "http://x.test/v2/sizes", "")
		if err != nil || !strings.Contains(string(b), m) {
			t.Fatalf("Machine %s got %s, %v", m, b, err)
		}
	}
	if err := rep.Check("check"); err != nil {
		t.Fatalf("Check of the check's scope: %v", err)
	}

	_, _, err := do(t, rep, WithScope(context.Background(), "check"), "GET", "http://x.test/v2/sizes", "")
	if err == nil || !strings.Contains(err.Error(), `recorded in scope "check/m`) {
		t.Fatalf("a request replayed outside the scope it was recorded in: %v", err)
	}
	shared := WithScope(context.Background(), "shared")
	if _, _, err := do(t, rep, shared, "GET", "http://x.test/v2/sizes", ""); err != nil {
		t.Fatal(err)
	}
	_, _, err = do(t, rep, shared, "GET", "http://x.test/v2/sizes", "")
	if err == nil || !strings.Contains(err.Error(), "already answered") || !strings.Contains(err.Error(), "scope of its own") {
		t.Fatalf("a second identical request in a shared scope: %v", err)
	}
	if err := rep.Check("check"); err == nil || !strings.Contains(err.Error(), "no recorded interaction") {
		t.Fatalf("Check missed the mismatch in the check's scope: %v", err)
	}

	// Unused interactions of a Machine's scope are reported under the
	// check, naming the Machine's scope.
	rep = NewReplayer(c, Redaction{})
	if err := rep.Check("check"); err == nil || !strings.Contains(err.Error(), `(scope "check/m2")`) {
		t.Fatalf("Check = %v", err)
	}
	if err := rep.CheckAll(); err == nil || strings.Count(err.Error(), "never requested") != 3 {
		t.Fatalf("CheckAll reports each scope once: %v", err)
	}
	// A parent scope's Check covers its sub-scopes: CheckAll does not
	// report them twice.
	c.Interactions = append(c.Interactions, Interaction{Scope: "check", Request: req, Response: Response{Status: 200}})
	rep = NewReplayer(c, Redaction{})
	if err := rep.CheckAll(); err == nil || strings.Count(err.Error(), "GET http://x.test/v2/sizes") != 4 {
		t.Fatalf("CheckAll = %v", err)
	}
}
