package hcloudsim

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func do(t *testing.T, s *Running, method, path, token, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: body %q: %v", method, path, b, err)
		}
	}
	return resp.StatusCode, resp.Header, m
}

func start(t *testing.T, o Options) *Running {
	s, err := Start(o, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtQk0Ty9x0CyLGvZVh0qpb3a9Wf5Gk3E8oX6m3bD0Jv test"

func TestServerLifecycle(t *testing.T) {
	s := start(t, Options{Token: "tok", BootDuration: 100 * time.Millisecond, ActionDuration: 50 * time.Millisecond})
	if code, _, m := do(t, s, "GET", "/servers", "wrong", ""); code != 401 || m["error"].(map[string]any)["code"] != "unauthorized" {
		t.Fatalf("wrong token: %d %v", code, m)
	}
	code, h, m := do(t, s, "POST", "/ssh_keys", "tok", `{"name":"k","public_key":"`+key+`"}`)
	if code != 201 || h.Get("RateLimit-Limit") != "3600" {
		t.Fatalf("ssh key: %d %v %v", code, m, h)
	}
	code, _, m = do(t, s, "POST", "/servers", "tok", `{"name":"a","server_type":"cx22","image":"ubuntu-24.04","location":"nbg1","ssh_keys":["k"],"labels":{"machine-uid":"u1"}}`)
	if code != 201 {
		t.Fatalf("create: %d %v", code, m)
	}
	srv := m["server"].(map[string]any)
	if srv["status"] != "initializing" || srv["datacenter"].(map[string]any)["name"] != "nbg1-dc3" {
		t.Fatalf("server %v", srv)
	}
	if code, _, m = do(t, s, "POST", "/servers", "tok", `{"name":"a","server_type":"cx22","image":"ubuntu-24.04"}`); code != 409 {
		t.Fatalf("duplicate name: %d %v", code, m)
	}
	_, _, m = do(t, s, "GET", "/servers?label_selector=machine-uid%3D%3Du1", "tok", "")
	if n := len(m["servers"].([]any)); n != 1 {
		t.Fatalf("selector found %d", n)
	}
	_, _, m = do(t, s, "GET", "/servers?label_selector=machine-uid+in+(u2,u3)", "tok", "")
	if n := len(m["servers"].([]any)); n != 0 {
		t.Fatalf("in-selector found %d", n)
	}
	if code, _, _ = do(t, s, "GET", "/servers?label_selector=%3D%3Dx", "tok", ""); code != 400 {
		t.Fatalf("bad selector: %d", code)
	}
	time.Sleep(150 * time.Millisecond)
	_, _, m = do(t, s, "GET", "/servers", "tok", "")
	if st := m["servers"].([]any)[0].(map[string]any)["status"]; st != "running" {
		t.Fatalf("status after boot %v", st)
	}
	code, _, m = do(t, s, "DELETE", "/servers/"+jsonID(srv["id"]), "tok", "")
	if code != 200 || m["action"].(map[string]any)["status"] != "running" {
		t.Fatalf("delete %d %v", code, m)
	}
	time.Sleep(80 * time.Millisecond)
	if code, _, m = do(t, s, "GET", "/servers/"+jsonID(srv["id"]), "tok", ""); code != 404 || m["error"].(map[string]any)["code"] != "not_found" {
		t.Fatalf("after delete %d %v", code, m)
	}
}

func jsonID(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestPagination(t *testing.T) {
	s := start(t, Options{})
	_, _, m := do(t, s, "GET", "/images?per_page=5&page=2", s.Token(), "")
	p := m["meta"].(map[string]any)["pagination"].(map[string]any)
	if len(m["images"].([]any)) != 5 || p["previous_page"].(float64) != 1 || p["next_page"].(float64) != 3 || p["total_entries"].(float64) != 12 {
		t.Fatalf("pagination %v", p)
	}
	_, _, m = do(t, s, "GET", "/images?name=ubuntu-24.04&architecture=arm", s.Token(), "")
	if imgs := m["images"].([]any); len(imgs) != 1 || imgs[0].(map[string]any)["architecture"] != "arm" {
		t.Fatalf("images %v", imgs)
	}
}

func TestRateLimitAndFaults(t *testing.T) {
	s := start(t, Options{RateLimit: 2})
	do(t, s, "GET", "/locations", s.Token(), "")
	do(t, s, "GET", "/locations", s.Token(), "")
	code, h, m := do(t, s, "GET", "/locations", s.Token(), "")
	if code != 429 || m["error"].(map[string]any)["code"] != "rate_limit_exceeded" || h.Get("RateLimit-Remaining") != "0" || h.Get("RateLimit-Reset") == "" {
		t.Fatalf("429: %d %v %v", code, h, m)
	}
	s.SetRateLimitRemaining(2)
	f := s.Inject(Fault{Name: "boom", Path: "/v1/locations", Status: 503, Times: 1})
	if code, _, m = do(t, s, "GET", "/locations", s.Token(), ""); code != 503 || f.Hits() != 1 {
		t.Fatalf("fault: %d %v", code, m)
	}
	// net/http retries an idempotent request once on a reused connection
	// that closed without an answer, so drop twice.
	s.Inject(Fault{Path: "/v1/locations", Drop: true, Times: 2})
	req, _ := http.NewRequest("GET", s.URL+"/locations", nil)
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("dropped connection answered")
	}
}
