package hcloudsim

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
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

// fakeNow is a fake clock for Options.Now; its Step moves it.
func fakeNow() *clocktesting.FakeClock {
	return clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

func TestServerLifecycle(t *testing.T) {
	clk := fakeNow()
	s := start(t, Options{Token: "tok", BootDuration: 100 * time.Millisecond, ActionDuration: 50 * time.Millisecond, Now: clk.Now})
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
	clk.Step(150 * time.Millisecond) // past the boot
	_, _, m = do(t, s, "GET", "/servers", "tok", "")
	if st := m["servers"].([]any)[0].(map[string]any)["status"]; st != "running" {
		t.Fatalf("status after boot %v", st)
	}
	code, _, m = do(t, s, "DELETE", "/servers/"+jsonID(srv["id"]), "tok", "")
	if code != 200 || m["action"].(map[string]any)["status"] != "running" {
		t.Fatalf("delete %d %v", code, m)
	}
	clk.Step(80 * time.Millisecond) // past the deletion's action
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

// createServer creates a server and returns its ID as the API renders it.
func createServer(t *testing.T, s *Running, body string) string {
	t.Helper()
	code, _, m := do(t, s, "POST", "/servers", s.Token(), body)
	if code != 201 {
		t.Fatalf("create: %d %v", code, m)
	}
	return jsonID(m["server"].(map[string]any)["id"])
}

func actionStatus(t *testing.T, s *Running, id string) string {
	t.Helper()
	_, _, m := do(t, s, "GET", "/actions/"+id, s.Token(), "")
	return m["action"].(map[string]any)["status"].(string)
}

// With DeleteReads, a deleted server is seen "deleting" by exactly that
// many reads, whatever the clock, then it is gone and its action done.
func TestDeleteByReads(t *testing.T) {
	clk := fakeNow()
	s := start(t, Options{DeleteReads: 2, ActionDuration: time.Millisecond, Now: clk.Now})
	id := createServer(t, s, `{"name":"a","server_type":"cx22","image":"ubuntu-24.04","labels":{"machine-uid":"u1"}}`)
	code, _, m := do(t, s, "DELETE", "/servers/"+id, s.Token(), "")
	if code != 200 || m["action"].(map[string]any)["status"] != "running" {
		t.Fatalf("delete %d %v", code, m)
	}
	action := jsonID(m["action"].(map[string]any)["id"])
	clk.Step(time.Hour) // far beyond ActionDuration: the clock must not matter
	if code, _, m = do(t, s, "GET", "/servers/"+id, s.Token(), ""); code != 200 || m["server"].(map[string]any)["status"] != "deleting" {
		t.Fatalf("first read: %d %v", code, m)
	}
	// A listing that does not show the server is no read of it.
	if _, _, m = do(t, s, "GET", "/servers?label_selector=machine-uid%3D%3Dother", s.Token(), ""); len(m["servers"].([]any)) != 0 {
		t.Fatalf("other selector: %v", m)
	}
	if st := actionStatus(t, s, action); st != "running" {
		t.Fatalf("action while deleting: %s", st)
	}
	_, _, m = do(t, s, "GET", "/servers?label_selector=machine-uid%3D%3Du1", s.Token(), "")
	if srvs := m["servers"].([]any); len(srvs) != 1 || srvs[0].(map[string]any)["status"] != "deleting" {
		t.Fatalf("second read: %v", m)
	}
	if got := s.Servers(); len(got) != 1 || got[0].Status != "deleting" {
		t.Fatalf("Servers() while deleting: %+v", got) // and it is no read
	}
	// Deleting again answers the same, still running, action.
	if code, _, m = do(t, s, "DELETE", "/servers/"+id, s.Token(), ""); code != 200 || jsonID(m["action"].(map[string]any)["id"]) != action {
		t.Fatalf("second delete: %d %v", code, m)
	}
	_, _, m = do(t, s, "GET", "/servers?label_selector=machine-uid%3D%3Du1", s.Token(), "")
	if srvs := m["servers"].([]any); len(srvs) != 0 {
		t.Fatalf("third read still lists %v", srvs)
	}
	if code, _, _ = do(t, s, "GET", "/servers/"+id, s.Token(), ""); code != 404 {
		t.Fatalf("after the reads: %d", code)
	}
	if st := actionStatus(t, s, action); st != "success" {
		t.Fatalf("action after deletion: %s", st)
	}
}

// DeleteDelay follows the injected clock; a negative one deletes at once.
func TestDeleteDelay(t *testing.T) {
	clk := fakeNow()
	clock, tick := clk.Now, clk.Step
	s := start(t, Options{Now: clock, DeleteDelay: 10 * time.Second})
	id := createServer(t, s, `{"name":"a","server_type":"cx22","image":"ubuntu-24.04"}`)
	_, _, m := do(t, s, "DELETE", "/servers/"+id, s.Token(), "")
	action := jsonID(m["action"].(map[string]any)["id"])
	tick(9 * time.Second)
	for i := 0; i < 3; i++ { // reads do not count here
		if code, _, m := do(t, s, "GET", "/servers/"+id, s.Token(), ""); code != 200 || m["server"].(map[string]any)["status"] != "deleting" {
			t.Fatalf("at 9s: %d %v", code, m)
		}
	}
	tick(time.Second)
	if code, _, _ := do(t, s, "GET", "/servers/"+id, s.Token(), ""); code != 404 {
		t.Fatalf("at 10s: %d", code)
	}
	if st := actionStatus(t, s, action); st != "success" {
		t.Fatalf("action: %s", st)
	}

	s = start(t, Options{Now: clock, DeleteDelay: -1})
	id = createServer(t, s, `{"name":"b","server_type":"cx22","image":"ubuntu-24.04"}`)
	code, _, m := do(t, s, "DELETE", "/servers/"+id, s.Token(), "")
	if code != 200 || m["action"].(map[string]any)["status"] != "success" {
		t.Fatalf("immediate delete: %d %v", code, m)
	}
	if code, _, _ := do(t, s, "GET", "/servers/"+id, s.Token(), ""); code != 404 {
		t.Fatalf("after an immediate delete: %d", code)
	}
}

// A server created without a public IPv4 has "ipv4": null; the test
// snapshot and GET /_sim/state used to dereference it.
func TestServerWithoutIPv4(t *testing.T) {
	s := start(t, Options{})
	createServer(t, s, `{"name":"v6only","server_type":"cx22","image":"ubuntu-24.04","public_net":{"enable_ipv4":false,"enable_ipv6":true}}`)
	_, _, m := do(t, s, "GET", "/servers", s.Token(), "")
	if pn := m["servers"].([]any)[0].(map[string]any)["public_net"].(map[string]any); pn["ipv4"] != nil || pn["ipv6"] == nil {
		t.Fatalf("public_net %v", pn)
	}
	if got := s.Servers(); len(got) != 1 || got[0].IPv4 != "" || got[0].Name != "v6only" || got[0].ServerType != "cx22" {
		t.Fatalf("Servers() = %+v", got)
	}
	req, _ := http.NewRequest("GET", "http://"+s.Addr+"/_sim/state", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var state struct{ Servers []ServerInfo }
	if err := json.NewDecoder(resp.Body).Decode(&state); resp.StatusCode != 200 || err != nil || len(state.Servers) != 1 {
		t.Fatalf("/_sim/state: %d %v %+v", resp.StatusCode, err, state)
	}
}
