package hcloudsim

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// quantile of sorted samples.
func quantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[int(q*float64(len(sorted)-1))]
}

func within(got, want time.Duration, tol float64) bool {
	return float64(got) >= float64(want)*(1-tol) && float64(got) <= float64(want)*(1+tol)
}

// The latency distribution has the median and 99th percentile it was
// fitted to.
func TestLatencyDistribution(t *testing.T) {
	d := fitLogNormal(200*time.Millisecond, time.Second)
	if got := d.at(0); !within(got, 200*time.Millisecond, 1e-9) {
		t.Fatalf("median quantile %v", got)
	}
	if got := d.at(z99); !within(got, time.Second, 1e-9) {
		t.Fatalf("p99 quantile %v", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	samples := make([]time.Duration, 10000)
	for i := range samples {
		samples[i] = d.sample(rng)
	}
	slices.Sort(samples)
	if p50 := quantile(samples, 0.5); !within(p50, 200*time.Millisecond, 0.05) {
		t.Errorf("sampled median %v, want 200ms ±5%%", p50)
	}
	if p99 := quantile(samples, 0.99); !within(p99, time.Second, 0.15) {
		t.Errorf("sampled p99 %v, want 1s ±15%%", p99)
	}
	if samples[0] <= 0 {
		t.Errorf("non-positive latency %v", samples[0])
	}
	// p99 <= p50: constant; p50 zero: off.
	if c := fitLogNormal(time.Second, time.Millisecond); c.sample(rng) != time.Second || c.sample(rng) != time.Second {
		t.Errorf("p99 < p50 is not the constant p50")
	}
	if off := fitLogNormal(0, time.Second); off.on || off.sample(rng) != 0 {
		t.Errorf("p50 0 is not off")
	}
}

// A request waits its latency; the /_sim/ endpoints do not.
func TestLatencyDelaysRequests(t *testing.T) {
	s := start(t, Options{LatencyP50: 60 * time.Millisecond, LatencyP99: 80 * time.Millisecond, Seed: 1})
	t0 := time.Now()
	if code, _, m := do(t, s, "GET", "/locations", s.Token(), ""); code != 200 {
		t.Fatalf("GET: %d %v", code, m)
	}
	// The distribution's minimum is far below 60ms, but this seed's first
	// draw is not: check what was drawn.
	want := New(s.opts).decide().latency
	if el := time.Since(t0); el < want || want < 40*time.Millisecond {
		t.Fatalf("answered in %v, drawn latency %v", el, want)
	}
}

// The delay ends when the client goes: the request has no effect.
func TestLatencyStopsWhenClientGoes(t *testing.T) {
	s := start(t, Options{LatencyP50: 5 * time.Second})
	c := &http.Client{Timeout: 50 * time.Millisecond}
	req, _ := http.NewRequest("POST", s.URL+"/servers", strings.NewReader(`{"name":"a","server_type":"cx22","image":"ubuntu-24.04"}`))
	req.Header.Set("Authorization", "Bearer "+s.Token())
	t0 := time.Now()
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("answered %d within the latency", resp.StatusCode)
	}
	// /_sim/stats is not delayed (else this loop would outlast the test).
	for {
		st := simStats(t, s)
		if st.Abandoned == 1 {
			break
		}
		if time.Since(t0) > time.Second {
			t.Fatalf("handler still waiting after %v: %+v", time.Since(t0), st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(s.Servers()) != 0 || len(s.Requests()) != 0 {
		t.Fatalf("abandoned request took effect: %+v %+v", s.Servers(), s.Requests())
	}
}

func simStats(t *testing.T, s *Running) RequestStats {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+s.Addr+"/_sim/stats", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st RequestStats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/_sim/stats: %d %v", resp.StatusCode, err)
	}
	return st
}

func serverBody(i int) string {
	return fmt.Sprintf(`{"name":"s%d","server_type":"cx22","image":"ubuntu-24.04"}`, i)
}

// ErrorRate answers that fraction with a Hetzner 5xx, and those create
// nothing.
func TestErrorRate(t *testing.T) {
	s := start(t, Options{ErrorRate: 0.5, Seed: 1})
	const n = 200
	created, failed := 0, 0
	statuses := map[int]int{}
	for i := 0; i < n; i++ {
		code, _, m := do(t, s, "POST", "/servers", s.Token(), serverBody(i))
		switch code {
		case 201:
			created++
		case 500, 502, 503:
			failed++
			statuses[code]++
			e, _ := m["error"].(map[string]any)
			if e == nil || e["code"] != statusCodes[code] || e["message"] == "" {
				t.Fatalf("%d body %v", code, m)
			}
		default:
			t.Fatalf("status %d %v", code, m)
		}
	}
	if failed < n*3/10 || failed > n*7/10 || len(statuses) != 3 {
		t.Fatalf("%d of %d failed, statuses %v", failed, n, statuses)
	}
	if got := len(s.Servers()); got != created {
		t.Fatalf("%d servers for %d created answers: a failed request took effect", got, created)
	}
	if st := s.RequestStats(); st.Errors != int64(failed) || st.Accepted != n {
		t.Fatalf("stats %+v, %d failed", st, failed)
	}
	s = start(t, Options{ErrorRate: 1})
	if code, _, _ := do(t, s, "POST", "/servers", s.Token(), serverBody(0)); code < 500 || len(s.Servers()) != 0 {
		t.Fatalf("ErrorRate 1: %d, %d servers", code, len(s.Servers()))
	}
}

// createServers POSTs n servers, each on a fresh connection (net/http
// retries no request then), and returns how many got no answer; every
// answer must be a 201.
func createServers(t *testing.T, s *Running, n int) (unanswered int) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := 0; i < n; i++ {
		req, _ := http.NewRequest("POST", s.URL+"/servers", strings.NewReader(serverBody(i)))
		req.Header.Set("Authorization", "Bearer "+s.Token())
		resp, err := c.Do(req)
		if err != nil {
			unanswered++
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	return unanswered
}

// countFault counts the recorded requests whose answer fault shaped.
func countFault(s *Running, fault string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Fault == fault {
			n++
		}
	}
	return n
}

// DropRate closes that fraction of connections without an answer, and
// those create nothing.
func TestDropRate(t *testing.T) {
	s := start(t, Options{DropRate: 0.5, Seed: 2})
	const n = 100
	dropped := createServers(t, s, n)
	if dropped < n*3/10 || dropped > n*7/10 {
		t.Fatalf("%d of %d dropped", dropped, n)
	}
	if got := len(s.Servers()); got != n-dropped {
		t.Fatalf("%d servers for %d answers: a dropped request took effect", got, n-dropped)
	}
	marked := countFault(s, FaultDropRate)
	if st := s.RequestStats(); st.Dropped != int64(dropped) || marked != dropped {
		t.Fatalf("stats %+v, %d recorded, %d dropped", st, marked, dropped)
	}
}

// LostAnswerRate lets the request take effect, then closes the connection
// without an answer: a server exists for every request, answered or not.
func TestLostAnswerRate(t *testing.T) {
	s := start(t, Options{LostAnswerRate: 0.5, Seed: 3})
	const n = 100
	lost := createServers(t, s, n)
	if lost < n*3/10 || lost > n*7/10 {
		t.Fatalf("%d of %d answers lost", lost, n)
	}
	if got := len(s.Servers()); got != n {
		t.Fatalf("%d servers for %d requests: a request whose answer was lost did not take effect", got, n)
	}
	marked := countFault(s, FaultLostAnswerRate)
	if st := s.RequestStats(); st.LostAnswers != int64(lost) || st.Dropped != 0 || marked != lost {
		t.Fatalf("stats %+v, %d recorded, %d lost", st, marked, lost)
	}
}

// serve runs one request through the handler without a network.
func serve(s *Sim, method, path string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	req.Header.Set("Authorization", "Bearer "+s.Token())
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	return w
}

// The request rate limit answers 429 with Retry-After and RateLimit-*
// headers of its bucket once the burst is spent, and refills at its rate,
// by the sim's clock.
func TestRequestsPerSecond(t *testing.T) {
	clk := fakeNow()
	s := New(Options{RequestsPerSecond: 10, Burst: 5, Now: clk.Now})
	for i := 0; i < 5; i++ {
		if w := serve(s, "GET", "/v1/locations"); w.Code != 200 {
			t.Fatalf("request %d of the burst: %d", i, w.Code)
		}
	}
	w := serve(s, "GET", "/v1/locations")
	var body struct{ Error struct{ Code string } }
	_ = json.Unmarshal(w.Body.Bytes(), &body)
	h := w.Header()
	reset := strconv.FormatInt(clk.Now().Add(time.Second).Unix(), 10) // full in 0.5s, rounded up
	if w.Code != 429 || body.Error.Code != "rate_limit_exceeded" || h.Get("Retry-After") != "1" ||
		h.Get("RateLimit-Limit") != "5" || h.Get("RateLimit-Remaining") != "0" || h.Get("RateLimit-Reset") != reset {
		t.Fatalf("past the burst: %d %s %v (reset %s)", w.Code, w.Body, h, reset)
	}
	clk.Step(100 * time.Millisecond) // one token
	if w := serve(s, "GET", "/v1/locations"); w.Code != 200 {
		t.Fatalf("after a token: %d", w.Code)
	}
	if w := serve(s, "GET", "/v1/locations"); w.Code != 429 {
		t.Fatalf("token spent: %d", w.Code)
	}
	// The control API is not limited.
	if w := serve(s, "GET", "/_sim/stats"); w.Code != 200 {
		t.Fatalf("/_sim/stats: %d", w.Code)
	}
	st := s.RequestStats()
	if st.Accepted != 6 || st.RateLimited != 2 || st.MaxAcceptedPerSecond != 6 || len(st.PerSecond) != 1 ||
		st.PerSecond[0].Accepted != 6 || st.PerSecond[0].RateLimited != 2 {
		t.Fatalf("stats %+v", st)
	}
	var marked int
	for _, r := range s.Requests() {
		if r.Fault == FaultRequestsPerSecond && r.Status == 429 {
			marked++
		}
	}
	if marked != 2 {
		t.Fatalf("%d 429s recorded", marked)
	}
}

// A client hammering the simulator gets no more than RequestsPerSecond +
// Burst accepted in any second, and the simulator counts it; without the
// limit, it counts them all.
func TestRequestsPerSecondMaxWindow(t *testing.T) {
	for _, tc := range []struct {
		rps          float64
		burst        int
		accepted     int64
		maxPerSecond int
	}{
		// 5 + 10/s over the 2.99s from the first request to the last;
		// the busiest second is the first: its burst and ~9 refills.
		{rps: 10, burst: 5, accepted: 34, maxPerSecond: 14},
		{accepted: 300, maxPerSecond: 100},
	} {
		clk := fakeNow()
		s := New(Options{RequestsPerSecond: tc.rps, Burst: tc.burst, Now: clk.Now})
		for i := 0; i < 300; i++ { // 100 a second for 3s
			serve(s, "GET", "/v1/locations")
			clk.Step(10 * time.Millisecond)
		}
		st := s.RequestStats()
		if st.Accepted != tc.accepted || st.Accepted+st.RateLimited != 300 || st.MaxAcceptedPerSecond != tc.maxPerSecond ||
			(tc.rps > 0 && float64(st.MaxAcceptedPerSecond) > tc.rps+float64(tc.burst)) {
			t.Fatalf("rps %v burst %d: %+v", tc.rps, tc.burst, st)
		}
		var sum int64
		for _, sec := range st.PerSecond {
			sum += int64(sec.Accepted)
			if tc.rps > 0 && sec.Accepted > int(tc.rps)+tc.burst {
				t.Fatalf("second %v accepted %d", sec.Second, sec.Accepted)
			}
		}
		if len(st.PerSecond) != 3 || sum != st.Accepted {
			t.Fatalf("per second %+v", st.PerSecond)
		}
		s.ResetRequestStats()
		if st := s.RequestStats(); st.Accepted != 0 || st.MaxAcceptedPerSecond != 0 || len(st.PerSecond) != 0 {
			t.Fatalf("after reset %+v", st)
		}
	}
}

// The same Seed makes the same choices.
func TestSeedReproducible(t *testing.T) {
	o := Options{LatencyP50: time.Millisecond, LatencyP99: 10 * time.Millisecond, ErrorRate: 0.3, DropRate: 0.2}
	run := func(seed int64) []decision {
		o.Seed = seed
		s := New(o)
		out := make([]decision, 200)
		for i := range out {
			out[i] = s.decide()
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("seed 7 twice chose differently")
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("seeds 7 and 8 chose alike")
	}
	kinds := map[string]bool{}
	for _, d := range a {
		if d.fault != nil {
			kinds[d.fault.Name] = true
		}
	}
	if !kinds[FaultErrorRate] || !kinds[FaultDropRate] {
		t.Fatalf("fault kinds %v", kinds)
	}
}

// ActionDurationP99 and BootDurationP99 make actions and boots last a
// random time around ActionDuration and BootDuration: at the median,
// some are done and some not.
func TestActionAndBootJitter(t *testing.T) {
	for _, jitter := range []bool{false, true} {
		clk := fakeNow()
		o := Options{ActionDuration: 100 * time.Millisecond, BootDuration: 100 * time.Millisecond, DeleteDelay: -1, Now: clk.Now, Seed: 3}
		if jitter {
			o.ActionDurationP99, o.BootDurationP99 = 10*time.Second, 10*time.Second
		}
		s := New(o)
		for i := 0; i < 20; i++ {
			req := httptest.NewRequest("POST", "/v1/servers", strings.NewReader(serverBody(i)))
			req.Header.Set("Authorization", "Bearer "+s.Token())
			w := httptest.NewRecorder()
			s.ServeHTTP(w, req)
			if w.Code != 201 {
				t.Fatalf("create: %d %s", w.Code, w.Body)
			}
		}
		clk.Step(100 * time.Millisecond)
		booting := 0
		for _, w := range s.Servers() {
			if w.Status == "initializing" {
				booting++
			}
		}
		var acts struct{ Actions []Action }
		_ = json.Unmarshal(serve(s, "GET", "/v1/actions?status=running&per_page=50").Body.Bytes(), &acts)
		running := len(acts.Actions)
		if !jitter && (booting != 0 || running != 0) {
			t.Fatalf("without jitter: %d booting, %d actions running at 100ms", booting, running)
		}
		if jitter && (booting == 0 || booting == 20 || running == 0 || running == 40) {
			t.Fatalf("with jitter: %d of 20 booting, %d of 40 actions running at the median", booting, running)
		}
	}
	s := New(Options{ActionDuration: 100 * time.Millisecond, ActionDurationP99: time.Second, Seed: 4})
	samples := make([]time.Duration, 2000)
	for i := range samples {
		samples[i] = s.actionDuration()
	}
	slices.Sort(samples)
	if p50 := quantile(samples, 0.5); !within(p50, 100*time.Millisecond, 0.1) {
		t.Fatalf("action median %v", p50)
	}
}
