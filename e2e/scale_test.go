//go:build e2e && scale

package e2e

// The load and fault harness (issue 30; docs/SCALE.md): `make scale` runs
// TestScale, whose subtests each take N machines up and down and assert
// the invariants on the way:
//
//   - direct: N machine-controller Machines created at once, reconciled by
//     wasmprov's Machine controller, then deleted at once;
//   - capi: a Cluster API MachineDeployment of a WasmMachineTemplate
//     scaled 0 → N → 0 (wasmprov controller -cluster-api);
//   - faults: direct against a hostile cloud (5% 5xx, 2% dropped
//     connections, 200 ms median latency, 10 requests a second), the
//     provider paced by the host at 9 a second; SCALE_FAULT_N machines;
//   - kill: direct with two replicas competing for the Lease, the leader
//     SIGKILLed every SCALE_KILL_EVERY (30 s) of both ramps and a new
//     replica started each time;
//   - apiserver: direct with kube-apiserver stopped and started again
//     (etcd running on) twice in the up ramp and once in the down ramp;
//   - hotswap: direct with a new version of the provider written to the
//     providers directory halfway through each ramp;
//   - ceiling (only when named): direct against a cloud with no latency,
//     for the throughput of one leader at the flags and policy given.
//
// Environment: SCALE_N (1000), SCALE_FAULT_N (100), SCALE_SCENARIOS (all,
// or a comma-separated list), SCALE_WRITE=1 (write docs/scale/, or
// SCALE_DIR),
// SCALE_FLAGS (more `wasmprov controller` flags, space-separated),
// SCALE_KILL_EVERY (30s), SCALE_POLICY (policy lines for the provider,
// separated by ";", e.g. "poolSize: 16"). SCALE_REPLOT=1 runs nothing but draws the
// plots again from the CSV and JSON files.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var scaleScenarios = []string{"direct", "capi", "faults", "kill", "apiserver", "hotswap"}

// moreScenarios run only when SCALE_SCENARIOS names them.
var moreScenarios = []string{"ceiling"}

type scaleConfig struct {
	n, faultN int
	scenarios []string
	write     bool
	flags     []string
	// policy (SCALE_POLICY) is appended to the provider's policy file of
	// every scenario but capi, e.g. "poolSize: 16".
	policy    string
	killEvery time.Duration
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func readScaleConfig(t *testing.T) scaleConfig {
	t.Helper()
	cfg := scaleConfig{
		n:         envInt(t, "SCALE_N", 1000),
		faultN:    envInt(t, "SCALE_FAULT_N", 100),
		write:     os.Getenv("SCALE_WRITE") == "1",
		flags:     strings.Fields(os.Getenv("SCALE_FLAGS")),
		policy:    strings.ReplaceAll(os.Getenv("SCALE_POLICY"), ";", "\n"),
		killEvery: 30 * time.Second,
	}
	if v := os.Getenv("SCALE_KILL_EVERY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SCALE_KILL_EVERY=%q: want a positive duration", v)
		}
		cfg.killEvery = d
	}
	sel := os.Getenv("SCALE_SCENARIOS")
	if sel == "" || sel == "all" {
		cfg.scenarios = scaleScenarios
	} else {
		for _, s := range strings.Split(sel, ",") {
			s = strings.TrimSpace(s)
			if !slices.Contains(scaleScenarios, s) && !slices.Contains(moreScenarios, s) {
				t.Fatalf("SCALE_SCENARIOS: unknown scenario %q (known: %v, %v)", s, scaleScenarios, moreScenarios)
			}
			cfg.scenarios = append(cfg.scenarios, s)
		}
	}
	return cfg
}

func TestScale(t *testing.T) {
	if os.Getenv("SCALE_REPLOT") == "1" {
		if err := replot(); err != nil {
			t.Fatal(err)
		}
		if err := writeSummary(); err != nil {
			t.Fatal(err)
		}
		t.Skip("SCALE_REPLOT=1: plotted the CSV files of " + scaleDir() + " again, ran nothing")
	}
	cfg := readScaleConfig(t)
	t.Logf("scale: N=%d, faults N=%d, scenarios %v, controller flags %v, write %v", cfg.n, cfg.faultN, cfg.scenarios, cfg.flags, cfg.write)
	runs := map[string]func(*testing.T, scaleConfig){
		"direct": func(t *testing.T, cfg scaleConfig) {
			scaleDirect(t, cfg, directCase{name: "direct", n: cfg.n, opts: defaultSimOptions()})
		},
		"capi": scaleCAPI,
		"faults": func(t *testing.T, cfg scaleConfig) {
			opts := defaultSimOptions()
			opts.ErrorRate, opts.DropRate, opts.LostAnswerRate = 0.05, 0.02, 0.01
			opts.LatencyP50, opts.LatencyP99 = 200*time.Millisecond, time.Second
			opts.RequestsPerSecond, opts.Burst = faultCloudRPS, faultCloudBurst
			scaleDirect(t, cfg, directCase{name: "faults", n: cfg.faultN, opts: opts, perMachine: 3 * time.Second,
				policy: "httpRequestsPerSecond: 9\nhttpBurst: 9\n",
				cloud:  "5% 5xx, 2% dropped, 1% answers lost after taking effect, latency p50 200ms p99 1s, 10 req/s burst 10; host pacing 9/s burst 9"})
		},
		// ceiling: direct against a cloud that answers at once and boots
		// and acts in no time, for the throughput of one leader (item 4
		// of issue 30): swept over -workers, poolSize and -kube-api-qps.
		"ceiling": func(t *testing.T, cfg scaleConfig) {
			scaleDirect(t, cfg, directCase{name: "ceiling", n: cfg.n, opts: hcloudsim.Options{RateLimit: 1_000_000},
				cloud: "no latency: servers boot and actions finish at once, no rate limit"})
		},
		"kill": func(t *testing.T, cfg scaleConfig) {
			scaleDirect(t, cfg, directCase{name: "kill", n: cfg.n, opts: defaultSimOptions(), replicas: 2, killEvery: cfg.killEvery})
		},
		"apiserver": func(t *testing.T, cfg scaleConfig) {
			scaleDirect(t, cfg, directCase{name: "apiserver", n: cfg.n, opts: defaultSimOptions(), disrupt: newRestarter})
		},
		"hotswap": func(t *testing.T, cfg scaleConfig) {
			scaleDirect(t, cfg, directCase{name: "hotswap", n: cfg.n, opts: defaultSimOptions(), disrupt: newSwapper})
		},
	}
	for _, name := range cfg.scenarios {
		t.Run(name, func(t *testing.T) { runs[name](t, cfg) })
	}
	if cfg.write {
		if err := writeSummary(); err != nil {
			t.Fatal(err)
		}
	}
}

const faultCloudRPS, faultCloudBurst = 10, 10

// defaultSimOptions are newWorld's simulator's.
func defaultSimOptions() hcloudsim.Options {
	return hcloudsim.Options{RateLimit: 1_000_000, BootDuration: 300 * time.Millisecond, ActionDuration: 100 * time.Millisecond}
}

// directCase is a scenario of wasmprov's Machine controller.
type directCase struct {
	name string
	n    int
	opts hcloudsim.Options
	// policy is appended to the provider's policy file.
	policy string
	cloud  string
	// perMachine is the time allowed per machine for each ramp, on top of
	// 3 minutes (default 600ms).
	perMachine time.Duration
	// replicas: 0 or 1, one controller without leader election; 2, two
	// competing for the Lease, the leader killed every killEvery.
	replicas  int
	killEvery time.Duration
	// disrupt, with one controller (c), returns what the scenario does
	// to the system during the ramps (apiserver, hotswap).
	disrupt func(w *world, r *scaleRun, c *proc) disruption
}

// disruption is what a scenario does to the system while the machines
// ramp up and down: leader kills, API server restarts, provider swaps.
type disruption interface {
	// phase starts a ramp ("up", "down"), ending the previous one; cur
	// is the sampler's latest count of the machines and servers.
	phase(name string, cur func() counts)
	// tick runs at every poll of a ramp's wait, on the test's goroutine.
	tick()
	// finish ends the last ramp, records the disruption in rep and
	// asserts that it happened as the scenario requires.
	finish(t *testing.T, rep *scaleReport)
}

func scaleDirect(t *testing.T, cfg scaleConfig, dc directCase) {
	n := dc.n
	w := newWorldWith(t, dc.opts)
	rep := &scaleReport{Cloud: dc.cloud}
	if policy := dc.policy + cfg.policy; policy != "" {
		if !strings.HasSuffix(policy, "\n") {
			policy += "\n"
		}
		writeFile(t, w.dir+"/hetzner.yaml", []byte("allowedHosts: [\"127.0.0.1:*\"]\nallowInsecureHTTP: true\ncallTimeout: 5m\n"+policy))
		rep.Policy = strings.TrimSpace(policy)
	}
	if rep.Cloud == "" {
		rep.Cloud = "no faults, no rate limit"
	}
	r := newScaleRun(t, dc.name, n, w.sim, func(ctx context.Context) (counts, error) {
		c := countServers(w.sim)
		l, err := machines.List(ctx, w.ns, metav1.ListOptions{})
		if err != nil {
			return c, err
		}
		c.Objects = len(l.Items)
		for i := range l.Items {
			if provisioned(&l.Items[i]) {
				c.Ready++
			}
		}
		return c, nil
	})
	d := startDirectControllers(w, r, cfg, dc, rep)
	per := dc.perMachine
	if per == 0 {
		per = 600 * time.Millisecond
	}
	timeout := 3*time.Minute + time.Duration(n)*per
	var tick func()
	r.begin()

	// Up: N Machines at once.
	r.setPhase("up")
	if d != nil {
		d.phase("up", r.current)
		tick = d.tick
	}
	start := time.Now()
	names := names("scale", n)
	parallel(t, names, func(name string) error {
		_, err := machines.Create(context.Background(), w.machine(name, nil))
		return err
	})
	rep.SubmitSeconds = time.Since(start).Seconds()
	rep.TestWrites += n
	r.waitFor(timeout, fmt.Sprintf("%d machines provisioned", n), func() (bool, string) { return w.directUp(n) }, tick)
	rep.UpSeconds = time.Since(start).Seconds()
	t.Logf("%d machines provisioned in %.1fs", n, rep.UpSeconds)
	w.checkDirectUp(n)
	rep.Invariants = append(rep.Invariants,
		"up: every Machine provisioned (providerID, addresses, both finalizers, no errorReason) with exactly one running server labelled with its UID",
		"up: no server without a Machine")

	// Down: every Machine deleted at once.
	r.setPhase("down")
	if d != nil {
		d.phase("down", r.current)
	}
	start = time.Now()
	parallel(t, names, func(name string) error {
		err := machines.Delete(context.Background(), w.ns, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	rep.TestWrites += n
	r.waitFor(timeout, "every Machine and server gone", w.directGone, tick)
	rep.DownSeconds = time.Since(start).Seconds()
	t.Logf("%d machines deleted in %.1fs", n, rep.DownSeconds)
	rep.Invariants = append(rep.Invariants, "down: no Machine (no finalizer stuck) and no server left")

	if d != nil {
		d.finish(t, rep)
	}
	r.finish(directMetrics, rep)
	checkCommon(t, rep, n)
	rep.Invariants = append(rep.Invariants, "throughout: never more than one server per Machine (sampled every second)",
		"no terminal error (wasmprov_controller_reconciles_total{result=\"terminal\"} = 0)")
	if dc.name == "faults" {
		checkFaults(t, rep)
	}
	if cfg.write && !t.Failed() {
		r.write(rep)
	}
}

// startDirectControllers starts the scenario's controller, or its
// replicas, and returns its disruption, if it has one.
func startDirectControllers(w *world, r *scaleRun, cfg scaleConfig, dc directCase, rep *scaleReport) disruption {
	if dc.replicas >= 2 {
		flags := cfg.flags
		rep.ControllerFlags = append([]string{"(leader election, 2 replicas)"}, flags...)
		k := &killer{w: w, r: r, every: dc.killEvery, flags: flags, byID: map[string]*proc{}}
		for range 2 {
			k.start()
		}
		eventually(w.t, 30*time.Second, "a leader", func() (bool, string) {
			id := w.leader()
			return k.byID[id] != nil, "holder " + id
		})
		r.leader = w.leader
		return k
	}
	flags := append([]string{"-leader-elect=false"}, cfg.flags...)
	rep.ControllerFlags = flags
	c := w.startController("a", flags...)
	r.track(c)
	if dc.disrupt != nil {
		return dc.disrupt(w, r, c)
	}
	return nil
}

// checkFaults asserts what the faults scenario adds: the cloud's limit
// held, and its faults happened.
func checkFaults(t *testing.T, rep *scaleReport) {
	t.Helper()
	if rep.CloudMaxPerSecond > faultCloudRPS+faultCloudBurst {
		t.Errorf("the simulator accepted %d requests in one second (limit %d + burst %d)", rep.CloudMaxPerSecond, faultCloudRPS, faultCloudBurst)
	}
	if rep.CloudErrors == 0 || rep.CloudDropped == 0 || rep.CloudLostAnswers == 0 {
		t.Errorf("faults: %d errors, %d drops and %d lost answers: the faults were not exercised", rep.CloudErrors, rep.CloudDropped, rep.CloudLostAnswers)
	}
	rep.Invariants = append(rep.Invariants, fmt.Sprintf("faults: the cloud accepted at most %d+%d requests in any second", faultCloudRPS, faultCloudBurst),
		"faults: no terminal error caused by throttling (none at all)",
		"faults: answers lost after a Create took effect made no second server (one server per Machine, none orphaned)")
}

// checkCommon asserts what every scenario must end with.
func checkCommon(t *testing.T, rep *scaleReport, n int) {
	t.Helper()
	if rep.MaxServersPerMachine > 1 {
		t.Errorf("a machine had %d servers at once", rep.MaxServersPerMachine)
	}
	if rep.TerminalErrors != 0 {
		t.Errorf("%v terminal errors", rep.TerminalErrors)
	}
	if rep.ProviderCalls == 0 || rep.CloudRequests == 0 {
		t.Errorf("no provider call (%v) or no cloud request (%d) counted: the figures are wrong", rep.ProviderCalls, rep.CloudRequests)
	}
}

// parallel runs fn for every name, 16 at a time, and fails the test on
// the first error.
func parallel(t *testing.T, names []string, fn func(string) error) {
	t.Helper()
	work := make(chan string)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for name := range work {
				if err := fn(name); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("%s: %w", name, err)
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
}

func serversByUID(sim *hcloudsim.Sim) map[string][]hcloudsim.ServerInfo {
	out := map[string][]hcloudsim.ServerInfo{}
	for _, s := range sim.Servers() {
		out[s.Labels["machine-uid"]] = append(out[s.Labels["machine-uid"]], s)
	}
	return out
}

// directUp reports whether the namespace has n Machines, each provisioned
// with exactly one running server; a Machine with an errorReason fails
// the test at once.
func (w *world) directUp(n int) (bool, string) {
	w.t.Helper()
	l, err := machines.List(context.Background(), w.ns, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	byUID := serversByUID(w.sim)
	ok := 0
	for i := range l.Items {
		m := &l.Items[i]
		if m.Status.ErrorReason != nil {
			msg := ""
			if m.Status.ErrorMessage != nil {
				msg = *m.Status.ErrorMessage
			}
			w.t.Fatalf("machine %s: errorReason %s: %s", m.Name, *m.Status.ErrorReason, msg)
		}
		ss := byUID[string(m.UID)]
		if provisioned(m) && len(ss) == 1 && ss[0].Status == "running" {
			ok++
		}
	}
	servers := 0
	for _, ss := range byUID {
		servers += len(ss)
	}
	return ok == n && len(l.Items) == n, fmt.Sprintf("%d of %d Machines provisioned with a running server; %d Machines, %d servers", ok, n, len(l.Items), servers)
}

// checkDirectUp asserts the invariants of n provisioned Machines.
func (w *world) checkDirectUp(n int) {
	w.t.Helper()
	ms := w.list()
	if len(ms) != n {
		w.t.Fatalf("%d Machines, want %d", len(ms), n)
	}
	uids := map[string]bool{}
	// The servers listed once: once per Machine was 10,000 lists of
	// 10,000 servers at N = 10,000, minutes of a core.
	byUID := serversByUID(w.sim)
	for i := range ms {
		uids[string(ms[i].UID)] = true
		// exactly one server, providerID, addresses, finalizers, no errorReason
		w.checkProvisionedOn(&ms[i], byUID[string(ms[i].UID)])
	}
	for _, s := range w.sim.Servers() {
		if !uids[s.Labels["machine-uid"]] {
			w.t.Errorf("server %s (%d) belongs to no Machine: labels %v", s.Name, s.ID, s.Labels)
		}
		if s.Status != "running" {
			w.t.Errorf("server %s is %s", s.Name, s.Status)
		}
	}
}

// directGone reports whether no Machine and no server is left; its state
// names a few Machines still there, with their finalizers.
func (w *world) directGone() (bool, string) {
	l, err := machines.List(context.Background(), w.ns, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	servers := len(w.sim.Servers())
	state := fmt.Sprintf("%d Machines, %d servers left", len(l.Items), servers)
	for i, m := range l.Items {
		if i == 3 {
			state += " ..."
			break
		}
		state += fmt.Sprintf("; %s deleting=%v finalizers=%v", m.Name, m.DeletionTimestamp != nil, m.Finalizers)
	}
	return len(l.Items) == 0 && servers == 0, state
}

// killer kills the leader of two or more replicas every `every` of a ramp
// and starts a new replica each time; the first kill of a ramp comes
// sooner, once a tenth of its machines are done, so that a ramp shorter
// than `every` (a small N) has one too; for a small N (shortRamps) the
// down ramp's comes at once, as its Machines go within 1-2 s at N = 20.
type killer struct {
	w      *world
	r      *scaleRun
	every  time.Duration
	flags  []string
	byID   map[string]*proc
	next   int
	last   time.Time
	kills  int // in the current phase
	total  int
	name   string
	done   func() int
	phaseT time.Time
	// noKill lists the ramps that ended without a kill.
	noKill []string
}

func (k *killer) start() *proc {
	id := fmt.Sprintf("r%d", k.next)
	k.next++
	p := k.w.startController(id, k.flags...)
	k.byID[id] = p
	k.r.track(p)
	return p
}

// phase starts a ramp (ending the previous one); its machines done are
// those provisioned on the way up, those gone on the way down.
func (k *killer) phase(name string, cur func() counts) {
	k.endPhase()
	done := func() int { return cur().Ready }
	if name == "down" {
		done = func() int { return k.r.n - cur().Objects }
	}
	k.kills, k.name, k.done, k.last, k.phaseT = 0, name, done, time.Now(), time.Now()
}

func (k *killer) endPhase() {
	if k.name != "" && k.kills == 0 {
		k.noKill = append(k.noKill, k.name)
	}
	k.name = ""
}

func (k *killer) finish(t *testing.T, rep *scaleReport) {
	t.Helper()
	k.endPhase()
	t.Logf("%d kills", k.total)
	if len(k.noKill) > 0 {
		t.Errorf("no controller was killed during the ramps %v: the scenario proved nothing there", k.noKill)
	}
	rep.Invariants = append(rep.Invariants, "kill: at least one leader SIGKILLed in each ramp")
}

func (k *killer) tick() {
	first := max(1, k.r.n/10)
	if k.r.n <= shortRamps && k.name == "down" {
		first = 0
	}
	due := time.Since(k.last) >= k.every
	if !due && k.kills == 0 && k.done() >= first {
		due = true
	}
	if !due {
		return
	}
	id := k.w.leader()
	p := k.byID[id]
	if p == nil || p.exited() {
		return // the Lease is changing hands
	}
	k.r.finalScrape(p)
	p.kill()
	delete(k.byID, id)
	k.r.mark("kill " + id + " (" + k.name + ")")
	k.r.t.Logf("killed the leader %s after %v of the ramp (%d of %d done)", id, time.Since(k.phaseT).Round(100*time.Millisecond), k.done(), k.r.n)
	k.start()
	k.last = time.Now()
	k.kills++
	k.total++
}

// ---- capi ----------------------------------------------------------------------

func scaleCAPI(t *testing.T, cfg scaleConfig) {
	n := cfg.n
	w := newCAPIWorld(t)
	flags := append([]string{"-leader-elect=false", "-cluster-api"}, cfg.flags...)
	c := w.startController("a", flags...)
	w.template("workers-cx22", nil)
	w.deployment("workers", "workers-cx22", 0)
	w.waitSettled("workers", 0, "cx22", 2*time.Minute)
	rep := &scaleReport{Cloud: "no faults, no rate limit", ControllerFlags: flags}

	r := newScaleRun(t, "capi", n, w.sim, func(ctx context.Context) (counts, error) {
		var l unstructured.UnstructuredList
		l.SetAPIVersion(infraVersion)
		l.SetKind("WasmMachineList")
		c := countServers(w.sim)
		if err := w.capi.c.List(ctx, &l, client.InNamespace(w.ns)); err != nil {
			return c, err
		}
		c.Objects = len(l.Items)
		for _, wm := range l.Items {
			if p, _, _ := unstructured.NestedBool(wm.Object, "status", "initialization", "provisioned"); p {
				c.Ready++
			}
		}
		return c, nil
	})
	r.track(c)
	timeout := 5*time.Minute + time.Duration(n)*1200*time.Millisecond
	r.begin()

	r.setPhase("up")
	start := time.Now()
	w.capi.scaleMD("workers", int32(n))
	rep.SubmitSeconds = time.Since(start).Seconds()
	rep.TestWrites++
	r.waitFor(timeout, fmt.Sprintf("MachineDeployment settled at %d", n), func() (bool, string) {
		st := w.capi.mdStatus("workers")
		cur := r.current()
		if !st.settled(int32(n)) {
			return false, fmt.Sprintf("%s; %d WasmMachines, %d provisioned, %d servers running", st, cur.Objects, cur.Ready, cur.Running)
		}
		msg := w.checkServers(n, "cx22")
		return msg == "", msg
	}, nil)
	rep.UpSeconds = time.Since(start).Seconds()
	t.Logf("MachineDeployment at %d in %.1fs", n, rep.UpSeconds)
	w.checkNoTerminalFailure()
	rep.Invariants = append(rep.Invariants,
		"up: MachineDeployment settled (N replicas ready, available, up to date) and exactly N running servers, one per WasmMachine (providerID, addresses, provisioned), no server without a WasmMachine",
		"up: no WasmMachine with TerminalFailure=True or failureReason")

	r.setPhase("down")
	start = time.Now()
	w.capi.scaleMD("workers", 0)
	rep.TestWrites++
	r.waitFor(timeout, "MachineDeployment scaled to 0", func() (bool, string) {
		st := w.capi.mdStatus("workers")
		ms, wms, ss := len(w.capi.machines()), len(w.capi.wasmMachines()), len(w.servers())
		return st.settled(0) && ms == 0 && wms == 0 && ss == 0,
			fmt.Sprintf("%s; %d Machines, %d WasmMachines, %d servers", st, ms, wms, ss)
	}, nil)
	rep.DownSeconds = time.Since(start).Seconds()
	t.Logf("MachineDeployment at 0 in %.1fs", rep.DownSeconds)
	rep.Invariants = append(rep.Invariants, "down: no Machine, no WasmMachine (no finalizer stuck), no server")

	r.finish(capiMetrics, rep)
	checkCommon(t, rep, n)
	rep.Invariants = append(rep.Invariants, "throughout: never more than one server per WasmMachine (sampled every second)",
		"no terminal error (wasmprov_wasmmachine_terminal_errors_total = 0)")
	w.capi.deleteMD("workers")
	w.waitNothingLeft(2 * time.Minute)
	if cfg.write && !t.Failed() {
		r.write(rep)
	}
}

// checkNoTerminalFailure asserts that no WasmMachine failed terminally.
func (w *capiWorld) checkNoTerminalFailure() {
	w.t.Helper()
	for _, wm := range w.capi.wasmMachines() {
		if r, ok, _ := unstructured.NestedString(wm.Object, "status", "failureReason"); ok {
			w.t.Errorf("WasmMachine %s: failureReason %s", wm.GetName(), r)
		}
		conds, _, _ := unstructured.NestedSlice(wm.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "TerminalFailure" && m["status"] == "True" {
				w.t.Errorf("WasmMachine %s: TerminalFailure: %v: %v", wm.GetName(), m["reason"], m["message"])
			}
		}
	}
}
