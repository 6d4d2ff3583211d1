//go:build e2e && scale

package e2e

// The disruptions of the apiserver and hotswap scenarios (docs/SCALE.md):
// kube-apiserver stopped and started again while the machines ramp, and
// the provider replaced by a new version while they ramp. Each is a
// disruption of scaleDirect, like the kill scenario's killer.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rampProgress is how much of a ramp's work is done, from 0 to 1: on the
// way up, half of it is the servers running and half the Machines
// provisioned; on the way down, the servers gone and the Machines gone.
// (Counting the servers too spreads the disruptions over a ramp whose
// Machines are provisioned late: docs/SCALE.md, "The first Machine of a
// large batch is ready late".)
func rampProgress(ramp string, c counts, n int) float64 {
	if ramp == "up" {
		return float64(c.Running+c.Ready) / float64(2*n)
	}
	return float64(2*n-c.Servers-c.Objects) / float64(2*n)
}

// ---- apiserver -----------------------------------------------------------------

// apiServerDown is how long kube-apiserver is down each time before its
// successor starts.
const apiServerDown = 5 * time.Second

// restartAt are the fractions of each ramp's work at which kube-apiserver
// is restarted: twice on the way up, once on the way down; smallRestartAt
// those for a small N (shortRamps), where 0 is the next poll. At N = 20
// a ramp takes 2-4 s, the samples come a second apart, and the controller
// catches up within a second of the API server's return: so there every
// restart comes at once, the up ramp's second half a second after the
// API server answers again, the controller busy redoing the Creates the
// outage failed.
var (
	restartAt      = map[string][]float64{"up": {0.25, 0.5}, "down": {0.5}}
	smallRestartAt = map[string][]float64{"up": {0, 0}, "down": {0}}
)

// shortRamps: with this many machines or fewer the ramps take seconds,
// too short for the disruptions at their fractions of the work.
const shortRamps = 100

// apiRestart is one stop and start of kube-apiserver.
type apiRestart struct {
	Phase string `json:"phase"`
	// At: when it was SIGKILLed, seconds since the run began; Progress:
	// the ramp's work done then (rampProgress).
	At       float64 `json:"t"`
	Progress float64 `json:"progress"`
	// DownSeconds: until its successor answered /healthz, the time the
	// API server was unavailable (apiServerDown, then its start).
	DownSeconds float64 `json:"down_seconds"`
}

// restarter stops kube-apiserver and starts it again (etcd runs on) at
// the restartAt points of each ramp; the controller, one process without
// leader election, must ride it out.
type restarter struct {
	r        *scaleRun
	c        *proc
	ramp     string
	cur      func() counts
	at       []float64 // this ramp's restarts still to come
	restarts []apiRestart
	missed   []string
}

func newRestarter(_ *world, r *scaleRun, c *proc) disruption { return &restarter{r: r, c: c} }

func (rs *restarter) phase(name string, cur func() counts) {
	rs.endPhase()
	rs.ramp, rs.cur, rs.at = name, cur, rs.points(name)
}

func (rs *restarter) points(ramp string) []float64 {
	if rs.r.n <= shortRamps {
		return smallRestartAt[ramp]
	}
	return restartAt[ramp]
}

func (rs *restarter) endPhase() {
	if len(rs.at) > 0 {
		rs.missed = append(rs.missed, fmt.Sprintf("%s: %d of %d", rs.ramp, len(rs.at), len(rs.points(rs.ramp))))
	}
	rs.at = nil
}

func (rs *restarter) tick() {
	if len(rs.at) == 0 {
		return
	}
	p := rampProgress(rs.ramp, rs.cur(), rs.r.n)
	if p < rs.at[0] {
		return
	}
	rs.at = rs.at[1:]
	rs.restart(p)
}

// restart stops kube-apiserver with SIGKILL, waits apiServerDown and
// starts it again through envtest. Not SIGTERM: a kube-apiserver shutting
// down gracefully closes its listener but serves the connections it has
// for up to a minute (it waits for their watches), so the clients
// connected already, the controller among them, would not see it down.
// envtest's APIServer.Stop would remove the certificate directory (and
// with it the serving and client CAs every client trusts); Start without
// Stop reuses the directory, the serving port, the client CA it keeps in
// memory and etcd's URL, so the successor has the same command line,
// which is checked.
func (rs *restarter) restart(progress float64) {
	t := rs.r.t
	t.Helper()
	pid := controlPlanePIDs()["kube-apiserver"]
	if pid == 0 {
		t.Fatal("no kube-apiserver among this test process's children")
	}
	args, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.r.apiServerStopping(pid); err != nil {
		t.Fatalf("reading kube-apiserver's counters before stopping it: %v", err)
	}
	start := time.Now()
	rs.r.mark("apiserver stopped (" + rs.ramp + ")")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// envtest's goroutine waiting for the process reaps it.
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			break
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("kube-apiserver (pid %d) still there a minute after SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(apiServerDown)
	as := testEnv.ControlPlane.APIServer
	as.StartTimeout = 2 * time.Minute // envtest's 20 s is short on two busy cores
	if err := as.Start(); err != nil {
		t.Fatalf("starting kube-apiserver again: %v", err)
	}
	down := time.Since(start)
	rs.r.mark("apiserver up (" + rs.ramp + ")")
	npid := controlPlanePIDs()["kube-apiserver"]
	nargs, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", npid))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(args, nargs) {
		t.Fatalf("kube-apiserver started again with other arguments:\nbefore: %s\nafter:  %s",
			bytes.ReplaceAll(args, []byte{0}, []byte{' '}), bytes.ReplaceAll(nargs, []byte{0}, []byte{' '}))
	}
	rs.restarts = append(rs.restarts, apiRestart{Phase: rs.ramp, At: round(start.Sub(rs.r.start).Seconds(), 1),
		Progress: round(progress, 2), DownSeconds: round(down.Seconds(), 1)})
	t.Logf("kube-apiserver restarted in the %s ramp at %.0f%% of its work: answering again %.1fs after its SIGKILL",
		rs.ramp, 100*progress, down.Seconds())
}

func (rs *restarter) finish(t *testing.T, rep *scaleReport) {
	t.Helper()
	rs.endPhase()
	rep.Restarts = rs.restarts
	if len(rs.missed) > 0 {
		t.Errorf("ramps ended before their restarts of kube-apiserver (ramp: restarts missed): %v", rs.missed)
	}
	// Without leader election nothing ends the process when its API
	// server goes away: its informers and the work queue retry. (With
	// leader election it exits by design once it cannot renew its Lease
	// within -renew-deadline, and its Deployment starts it again.)
	if rs.c.exited() {
		t.Errorf("the controller exited (%v) across the restarts of kube-apiserver; its log:\n%s", rs.c.err, tail(rs.c.log.String(), 40))
	}
	rep.Invariants = append(rep.Invariants,
		fmt.Sprintf("apiserver: kube-apiserver SIGKILLed and started again 5 s later with the same command line, etcd running on, twice during the up ramp (at %v of its work) and once during the down ramp (at %v)",
			rs.points("up"), rs.points("down")),
		"apiserver: the controller process (-leader-elect=false) stayed up throughout")
}

// ---- hotswap -------------------------------------------------------------------

// providerSwap is one new version of the provider written mid-ramp.
type providerSwap struct {
	Phase string `json:"phase"`
	// At: when the new module was written to the providers directory,
	// seconds since the run began; Progress: the ramp's work done then.
	At       float64 `json:"t"`
	Progress float64 `json:"progress"`
	SHA256   string  `json:"module_sha256"`
	// ServingSeconds: from the write until the controller's
	// wasmprov_provider_info named the new module (-1: not before the
	// ramp ended).
	ServingSeconds float64 `json:"serving_seconds"`
	// CallsAfter: provider calls counted from then until the ramp's end.
	// At most PoolSize of them (the old version's instances) can have
	// started on the old version.
	CallsAfter float64 `json:"calls_after"`
	PoolSize   float64 `json:"pool_size"`

	written time.Time
	callsAt float64
	served  bool
}

// swapAt is the fraction of each ramp's work at which the swapper writes
// a new version, half of it; smallSwapAt for a small N (shortRamps),
// whose ramps take 2-4 s, seen a second apart by the samples: there the
// swap comes at the ramp's first poll, as the registry takes about half
// a second to load a version, and a later one would leave it no work.
var (
	swapAt      = map[string]float64{"up": 0.5, "down": 0.5}
	smallSwapAt = map[string]float64{"up": 0, "down": 0}
)

// swapper writes a new version of the provider's module (the same build
// with another trailing custom section, as TestHotReload does: a new
// digest, the same behaviour) into the providers directory at the swapAt
// point of each ramp, and watches the controller take it up.
type swapper struct {
	w       *world
	r       *scaleRun
	c       *proc
	ramp    string
	cur     func() counts
	due     bool
	pending *providerSwap
	swaps   []providerSwap
	missed  []string
}

func newSwapper(w *world, r *scaleRun, c *proc) disruption { return &swapper{w: w, r: r, c: c} }

func (s *swapper) phase(name string, cur func() counts) {
	s.endPhase()
	s.ramp, s.cur, s.due = name, cur, true
}

// endPhase judges the ramp's swap: whether its version served before the
// ramp ended, and how many calls were counted after.
func (s *swapper) endPhase() {
	if s.due {
		s.missed = append(s.missed, s.ramp)
	}
	s.due = false
	p := s.pending
	if p == nil {
		return
	}
	s.pending = nil
	if !p.served {
		p.ServingSeconds = -1
	} else if ms, err := scrape(s.c.metrics); err == nil {
		p.CallsAfter = ms.sum("wasmprov_provider_calls_total", nil) - p.callsAt
	} else {
		s.r.t.Errorf("reading the controller's metrics: %v", err)
	}
	s.swaps = append(s.swaps, *p)
}

func (s *swapper) tick() {
	if s.due && rampProgress(s.ramp, s.cur(), s.r.n) >= s.point(s.ramp) {
		s.due = false
		s.write()
	}
	if s.pending != nil && !s.pending.served {
		s.poll()
	}
}

func (s *swapper) point(ramp string) float64 {
	if s.r.n <= shortRamps {
		return smallSwapAt[ramp]
	}
	return swapAt[ramp]
}

func (s *swapper) write() {
	v := len(s.swaps) + 1
	wasm := withCustomSection(hetznerWasm, fmt.Sprintf("e2e-scale-version-%d", v))
	sum := sha256.Sum256(wasm)
	p := &providerSwap{Phase: s.ramp, SHA256: hex.EncodeToString(sum[:]), Progress: round(rampProgress(s.ramp, s.cur(), s.r.n), 2)}
	writeFile(s.r.t, s.w.dir+"/hetzner.wasm", wasm)
	p.written = time.Now()
	p.At = round(p.written.Sub(s.r.start).Seconds(), 1)
	s.pending = p
	s.r.mark(fmt.Sprintf("swap to v%d (%s)", v, s.ramp))
	s.r.t.Logf("provider v%d (sha256 %.12s) written in the %s ramp at %.0f%% of its work", v, p.SHA256, s.ramp, 100*p.Progress)
}

// poll looks for the pending version among the controller's serving ones.
func (s *swapper) poll() {
	p := s.pending
	ms, err := scrape(s.c.metrics)
	if err != nil {
		return // the sampler counts failed readings
	}
	if servingSHA(ms) != p.SHA256 {
		return
	}
	p.served = true
	p.ServingSeconds = round(time.Since(p.written).Seconds(), 2)
	p.callsAt = ms.sum("wasmprov_provider_calls_total", nil)
	p.PoolSize = ms.sum("wasmprov_provider_pool_size", map[string]string{"provider": "hetzner"})
	s.r.mark(fmt.Sprintf("serving v%d", len(s.swaps)+1))
	s.r.t.Logf("provider v%d serving %.1fs after it was written", len(s.swaps)+1, p.ServingSeconds)
}

// servingSHA is the module digest wasmprov_provider_info names for the
// hetzner provider ("" if none, "several" if more than one).
func servingSHA(ms metricSet) string {
	sha := ""
	for _, x := range ms["wasmprov_provider_info"] {
		if x.labels["provider"] != "hetzner" || x.value != 1 {
			continue
		}
		if sha != "" {
			return "several"
		}
		sha = x.labels["module_sha256"]
	}
	return sha
}

func (s *swapper) finish(t *testing.T, rep *scaleReport) {
	t.Helper()
	s.endPhase()
	rep.Swaps = s.swaps
	if len(s.missed) > 0 {
		t.Errorf("ramps ended without a swap: %v", s.missed)
	}
	for i, p := range s.swaps {
		switch {
		case !p.served:
			t.Errorf("provider v%d (written in the %s ramp) was not serving when the ramp ended", i+1, p.Phase)
		case p.CallsAfter <= p.PoolSize:
			t.Errorf("provider v%d: %v calls counted after it served, no more than the %v the old version's instances may have run: the ramp had no work left for it",
				i+1, p.CallsAfter, p.PoolSize)
		}
	}
	ms, err := scrape(s.c.metrics)
	if err != nil {
		t.Fatalf("reading the controller's metrics: %v", err)
	}
	if len(s.swaps) > 0 {
		if got, want := servingSHA(ms), s.swaps[len(s.swaps)-1].SHA256; got != want {
			t.Errorf("wasmprov_provider_info names module %q, want the last version written, %s", got, want)
		}
	}
	events := ms.by("wasmprov_registry_events_total", "kind")
	if int(events["reloaded"]) != len(s.swaps) || events["rejected"] != 0 || ms.sum("wasmprov_provider_reloads_total", map[string]string{"result": "failed"}) != 0 {
		t.Errorf("registry events %v for %d versions written, want as many reloaded and none rejected", events, len(s.swaps))
	}
	s.checkCallErrors(t, ms)
	s.checkReconcileErrors(t, ms)
	rep.Invariants = append(rep.Invariants,
		fmt.Sprintf("hotswap: a new version of the provider written at %v of the up ramp's work and %v of the down ramp's, serving (wasmprov_provider_info names its sha256) before its ramp ended, with more provider calls after than the old version's pool could hold",
			s.point("up"), s.point("down")),
		"hotswap: as many reloads as versions written, none rejected, the last one serving",
		"hotswap: no provider call failed but the registry's smoke test of each version loaded (AddDefaults of an empty spec, refused) and Get/Delete answering not-found for a server already gone",
		"hotswap: no failed reconcile (wasmprov_controller_reconciles_total{result=\"error\"} = 0)")
}

// checkReconcileErrors fails the test for any failed reconcile, quoting
// the controller's log lines of them ("reconcile failed", with the
// error). direct has none since the controller treats a Machine already
// gone as the end of its deletion (docs/SCALE.md, "Found", item 2).
func (s *swapper) checkReconcileErrors(t *testing.T, ms metricSet) {
	t.Helper()
	failed := ms.sum("wasmprov_controller_reconciles_total", map[string]string{"result": "error"})
	if failed == 0 {
		return
	}
	var lines []string
	for _, line := range strings.Split(s.c.log.String(), "\n") {
		if strings.Contains(line, "reconcile failed") {
			lines = append(lines, line)
		}
	}
	t.Errorf("%v failed reconciles:\n%s", failed, strings.Join(lines, "\n"))
}

// checkCallErrors fails the test for a failed provider call that a swap
// could have caused. Two kinds fail in every run and are not failures of
// the swap: the registry's smoke test of each version it loads calls
// AddDefaults with an empty spec, which the provider refuses (terminal),
// once per version; and Get or Delete of a server already gone answers
// not-found, which the controller reads as deleted.
func (s *swapper) checkCallErrors(t *testing.T, ms metricSet) {
	t.Helper()
	smoke, gone, other := 0.0, 0.0, map[string]float64{}
	for _, x := range ms["wasmprov_provider_call_errors_total"] {
		method, class := x.labels["method"], x.labels["class"]
		switch {
		case method == "AddDefaults" && class == "terminal":
			smoke += x.value
		case (method == "Get" || method == "Delete") && class == "not-found":
			gone += x.value
		case x.value > 0:
			other[method+" "+class] += x.value
		}
	}
	t.Logf("failed provider calls: %v smoke tests, %v not-found, others %v", smoke, gone, other)
	if len(other) > 0 {
		t.Errorf("provider calls failed: %v (method class: count)", other)
	}
	if want := float64(1 + len(s.swaps)); smoke != want {
		t.Errorf("%v refused AddDefaults calls, want %v, one smoke test per version loaded", smoke, want)
	}
}
