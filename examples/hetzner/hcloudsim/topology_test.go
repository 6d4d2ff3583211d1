package hcloudsim

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

// A server created into a placement group, a network and a firewall shows
// them in its answer, and leaves them when it is gone; the group refuses
// an eleventh server and its own deletion while it holds one.
func TestTopology(t *testing.T) {
	s := start(t, Options{DeleteDelay: -1})
	netID, _ := s.AddNetwork("kubernetes", "10.0.0.0/16")
	fwID, _ := s.AddFirewall("k8s-nodes")
	code, _, m := do(t, s, "POST", "/placement_groups", s.Token(), `{"name":"pg-1","type":"spread","labels":{"a":"b"}}`)
	if code != 201 {
		t.Fatalf("create placement group: %d %v", code, m)
	}
	pg := jsonID(m["placement_group"].(map[string]any)["id"])
	if code, _, _ = do(t, s, "POST", "/placement_groups", s.Token(), `{"name":"pg-2","type":"cluster"}`); code != 400 {
		t.Fatalf("non-spread type: %d", code)
	}
	body := func(name string) string {
		return fmt.Sprintf(`{"name":%q,"server_type":"cx22","image":"ubuntu-24.04","placement_group":%s,"networks":[%d],"firewalls":[{"firewall":%d}]}`, name, pg, netID, fwID)
	}
	code, _, m = do(t, s, "POST", "/servers", s.Token(), body("s0"))
	if code != 201 {
		t.Fatalf("create: %d %v", code, m)
	}
	srv := m["server"].(map[string]any)
	if got := srv["placement_group"].(map[string]any)["name"]; got != "pg-1" {
		t.Fatalf("placement_group %v", got)
	}
	pn := srv["private_net"].([]any)
	if len(pn) != 1 || pn[0].(map[string]any)["ip"] != "10.0.0.2" {
		t.Fatalf("private_net %v", pn)
	}
	if fws := srv["public_net"].(map[string]any)["firewalls"].([]any); len(fws) != 1 || fws[0].(map[string]any)["status"] != "applied" {
		t.Fatalf("firewalls %v", fws)
	}
	first := jsonID(srv["id"])
	fip, err := s.AddFloatingIP(int64(srv["id"].(float64)))
	if err != nil {
		t.Fatal(err)
	}
	_, _, m = do(t, s, "GET", "/floating_ips/"+fmt.Sprint(fip), s.Token(), "")
	if ip := m["floating_ip"].(map[string]any); ip["server"] == nil || !strings.HasPrefix(ip["ip"].(string), "198.51.100.") {
		t.Fatalf("floating ip %v", ip)
	}
	for i := 1; i < PlacementGroupLimit; i++ {
		if code, _, m = do(t, s, "POST", "/servers", s.Token(), body(fmt.Sprintf("s%d", i))); code != 201 {
			t.Fatalf("server %d: %d %v", i, code, m)
		}
	}
	code, _, m = do(t, s, "POST", "/servers", s.Token(), body("s10"))
	if code != 412 || m["error"].(map[string]any)["code"] != "placement_error" {
		t.Fatalf("eleventh server: %d %v", code, m)
	}
	if code, _, _ = do(t, s, "DELETE", "/placement_groups/"+pg, s.Token(), ""); code != 422 {
		t.Fatalf("delete of a full group: %d", code)
	}
	_, _, m = do(t, s, "GET", "/firewalls?name=k8s-nodes", s.Token(), "")
	if fw := m["firewalls"].([]any); len(fw) != 1 || len(fw[0].(map[string]any)["applied_to"].([]any)) != PlacementGroupLimit {
		t.Fatalf("firewall %v", fw)
	}
	for _, srv := range s.Servers() {
		do(t, s, "DELETE", fmt.Sprintf("/servers/%d", srv.ID), s.Token(), "")
	}
	if pgs := s.PlacementGroups(); len(pgs) != 1 || len(pgs[0].Servers) != 0 {
		t.Fatalf("placement groups after the deletes %+v", pgs)
	}
	if fws := s.Firewalls(); len(fws[0].AppliedTo) != 0 {
		t.Fatalf("firewall still applied %+v", fws[0].AppliedTo)
	}
	if nets := s.Networks(); len(nets[0].Servers) != 0 {
		t.Fatalf("network still has servers %+v", nets[0].Servers)
	}
	_, _, m = do(t, s, "GET", "/floating_ips", s.Token(), "")
	if ip := m["floating_ips"].([]any)[0].(map[string]any); ip["server"] != nil {
		t.Fatalf("floating ip still assigned to deleted server %s: %v", first, ip)
	}
	if code, _, _ = do(t, s, "DELETE", "/placement_groups/"+pg, s.Token(), ""); code != 204 {
		t.Fatalf("delete of the empty group: %d", code)
	}
	// Unknown references are refused before anything is created.
	for _, b := range []string{
		`{"name":"x","server_type":"cx22","image":"ubuntu-24.04","networks":[1]}`,
		`{"name":"x","server_type":"cx22","image":"ubuntu-24.04","firewalls":[{"firewall":1}]}`,
		`{"name":"x","server_type":"cx22","image":"ubuntu-24.04","placement_group":1}`,
		`{"name":"x","server_type":"cx22","image":"ubuntu-24.04","public_net":{"enable_ipv4":false,"enable_ipv6":false}}`,
		`{"name":"x","server_type":"cx21","image":"ubuntu-24.04"}`,
		`{"name":"x","server_type":"cx22","image":"ubuntu-20.04"}`,
	} {
		if code, _, m = do(t, s, "POST", "/servers", s.Token(), b); code != 400 || m["error"].(map[string]any)["code"] != "invalid_input" {
			t.Fatalf("%s: %d %v", b, code, m)
		}
	}
	if n := len(s.Servers()); n != 0 {
		t.Fatalf("%d servers left", n)
	}
}

// FuzzSimSequence drives the simulator with a sequence of create and
// delete requests chosen by the input: whatever the sequence, it never
// panics, answers JSON error objects for what it refuses, and keeps its
// placement groups, networks and firewalls pointing at live servers only.
func FuzzSimSequence(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 5, 5, 7})
	f.Add([]byte("\x03\x09\x01\xff\x00\x10"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		s := New(Options{DeleteDelay: -1, RateLimit: 1 << 20})
		netID, _ := s.AddNetwork("n", "10.1.0.0/16")
		fwID, _ := s.AddFirewall("f")
		req := func(method, path, body string) int {
			r := httptest.NewRequest(method, path, strings.NewReader(body))
			r.Header.Set("Authorization", "Bearer "+s.Token())
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			if w.Code >= 400 && !strings.Contains(w.Body.String(), `"error"`) {
				t.Fatalf("%s %s: %d without an error object: %q", method, path, w.Code, w.Body.String())
			}
			if w.Code >= 500 {
				t.Fatalf("%s %s %s: %d", method, path, body, w.Code)
			}
			return w.Code
		}
		for i, op := range ops {
			arg := int64(op >> 3)
			switch op % 8 {
			case 0:
				req("POST", "/v1/placement_groups", fmt.Sprintf(`{"name":"pg-%d","type":"spread"}`, arg))
			case 1, 2:
				req("POST", "/v1/servers", fmt.Sprintf(`{"name":"s-%d","server_type":"cx22","image":"ubuntu-24.04","placement_group":%d,"networks":[%d],"firewalls":[{"firewall":%d}]}`,
					i, 1000+arg, netID, fwID))
			case 3:
				req("POST", "/v1/servers", fmt.Sprintf(`{"name":"s-%d","server_type":"cx22","image":"ubuntu-24.04","networks":[%d],"public_net":{"enable_ipv4":%t,"enable_ipv6":false}}`,
					i, netID+arg%2, arg%3 == 0))
			case 4:
				req("DELETE", fmt.Sprintf("/v1/servers/%d", 1000+arg), "")
			case 5:
				req("DELETE", fmt.Sprintf("/v1/placement_groups/%d", 1000+arg), "")
			case 6:
				_, _ = s.AddFloatingIP(1000 + arg)
			case 7:
				req("GET", "/v1/servers?label_selector=a%3D%3Db", "")
				req("GET", "/v1/placement_groups?type=spread", "")
			}
		}
		live := map[int64]bool{}
		for _, srv := range s.Servers() {
			live[srv.ID] = true
		}
		for _, pg := range s.PlacementGroups() {
			if len(pg.Servers) > PlacementGroupLimit {
				t.Fatalf("group %d holds %d servers", pg.ID, len(pg.Servers))
			}
			for _, id := range pg.Servers {
				if !live[id] {
					t.Fatalf("group %d holds deleted server %d", pg.ID, id)
				}
			}
		}
		for _, fw := range s.Firewalls() {
			for _, r := range fw.AppliedTo {
				if !live[r.Server.ID] {
					t.Fatalf("firewall applied to deleted server %d", r.Server.ID)
				}
			}
		}
		for _, n := range s.Networks() {
			for _, id := range n.Servers {
				if !live[id] {
					t.Fatalf("network holds deleted server %d", id)
				}
			}
		}
	})
}
