//go:build e2e && scale

package e2e

// The measuring side of the scale harness (docs/SCALE.md): a sampler that,
// every second, counts the machines and the simulator's servers, scrapes
// every controller process's /metrics, reads their RSS and CPU from /proc
// and the simulator's request counts; the API server's write counters
// before and after; the processes of the control plane.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricSample is one sample of a metric family: its labels and value
// (counter, gauge or untyped).
type metricSample struct {
	labels map[string]string
	value  float64
}

// metricSet is a /metrics page, by family name.
type metricSet map[string][]metricSample

func (m metricSet) sum(name string, match map[string]string) float64 {
	total := 0.0
next:
	for _, s := range m[name] {
		for k, v := range match {
			if s.labels[k] != v {
				continue next
			}
		}
		total += s.value
	}
	return total
}

// by sums a family's samples by the value of one label.
func (m metricSet) by(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m[name] {
		out[s.labels[label]] += s.value
	}
	return out
}

func parseMetrics(body io.Reader) (metricSet, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(body)
	if err != nil {
		return nil, err
	}
	out := metricSet{}
	for name, f := range families {
		for _, m := range f.Metric {
			s := metricSample{labels: map[string]string{}}
			for _, l := range m.Label {
				s.labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.Counter != nil:
				s.value = m.Counter.GetValue()
			case m.Gauge != nil:
				s.value = m.Gauge.GetValue()
			case m.Untyped != nil:
				s.value = m.Untyped.GetValue()
			default:
				continue // histograms and summaries: not needed
			}
			out[name] = append(out[name], s)
		}
	}
	return out, nil
}

var scrapeClient = &http.Client{Timeout: 5 * time.Second}

// scrape reads a controller's /metrics; unlike proc.metric it reports
// errors rather than failing the test, for the sampler's goroutine.
func scrape(url string) (metricSet, error) {
	resp, err := scrapeClient.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// apiserverMetrics reads the API server's /metrics with the admin
// credentials.
func apiserverMetrics(ctx context.Context) (metricSet, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return parseMetrics(bytes.NewReader(raw))
}

// writeVerbs are the verbs of apiserver_request_total that write.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "APPLY": true, "DELETECOLLECTION": true}

// apiWrites sums apiserver_request_total's writes by resource and verb
// ("group/resource[/subresource] VERB"); those answered with an error
// are counted under "... VERB failed CODE" too (409 Conflict, 404 Not
// Found...).
func apiWrites(m metricSet) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m["apiserver_request_total"] {
		verb := s.labels["verb"]
		if !writeVerbs[verb] {
			continue
		}
		key := s.labels["group"] + "/" + s.labels["resource"]
		if key[0] == '/' {
			key = "core" + key
		}
		if sub := s.labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		key += " " + verb
		out[key] += s.value
		if code, _ := strconv.Atoi(s.labels["code"]); code >= 400 {
			out[key+" failed "+s.labels["code"]] += s.value
		}
	}
	return out
}

// ---- /proc -------------------------------------------------------------------

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go runs on here.
const clockTicks = 100

// procCPU returns a process's user+system CPU time.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no comm", pid)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64) // field 14, utime
	st, err2 := strconv.ParseInt(f[12], 10, 64) // field 15, stime
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// procMem returns a process's resident set size now (VmRSS) and at its
// peak (VmHWM), in bytes.
func procMem(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		f := strings.Fields(v) // "123456 kB"
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		if k == "VmRSS" {
			rss = n << 10
		} else {
			hwm = n << 10
		}
	}
	return rss, hwm, nil
}

// controlPlanePIDs finds kube-apiserver and etcd among this test
// process's children (envtest starts them).
func controlPlanePIDs() map[string]int {
	out := map[string]int{}
	self := os.Getpid()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		comm := s[open+1 : end]
		f := strings.Fields(s[end+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		if ppid != self || (comm != "kube-apiserver" && comm != "etcd") {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		out[comm] = pid
	}
	return out
}

// hostInfo describes the machine a run ran on.
type hostInfo struct {
	CPUs     int     `json:"cpus"`
	CPUModel string  `json:"cpu_model"`
	MemGiB   float64 `json:"mem_gib"`
	Go       string  `json:"go"`
}

func readHostInfo() hostInfo {
	h := hostInfo{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && k == "MemTotal" {
				f := strings.Fields(v)
				if len(f) > 0 {
					kb, _ := strconv.ParseFloat(f[0], 64)
					h.MemGiB = float64(int(kb/(1<<20)*10)) / 10
				}
			}
		}
	}
	return h
}

// ---- the run -----------------------------------------------------------------

// counts is what a scenario's counter sees of its machines at one moment.
type counts struct {
	// Objects: the Machines (direct) or WasmMachines (capi) that exist.
	Objects int
	// Ready: those provisioned (providerID and addresses).
	Ready int
	// Servers: the simulator's servers; Running those running.
	Servers, Running int
	// MaxServersPerMachine: the most servers labelled with one machine's
	// UID.
	MaxServersPerMachine int
	DupUID               string
}

// countServers groups the simulator's servers by the machine UID label.
func countServers(sim *hcloudsim.Sim) (c counts) {
	per := map[string]int{}
	for _, s := range sim.Servers() {
		c.Servers++
		if s.Status == "running" {
			c.Running++
		}
		uid := s.Labels["machine-uid"]
		per[uid]++
		if per[uid] > c.MaxServersPerMachine {
			c.MaxServersPerMachine, c.DupUID = per[uid], uid
		}
	}
	return c
}

// sample is one second of a run.
type sample struct {
	T            float64 // seconds since the run started
	Phase        string
	Objects      int
	Ready        int
	Servers      int
	Running      int
	CloudRPS     float64 // requests the simulator accepted, per second since the last sample
	Cloud429     float64 // and refused with 429
	Throttled    float64 // seconds requests waited for the host's pacing, cumulative
	ProviderCall float64 // provider calls, cumulative
	RSSMiB       float64 // controllers' resident memory, summed
	CPUPercent   float64 // controllers' CPU since the last sample (100 = one core)
	Pool         float64 // provider pool instances, summed
	Leader       string
}

// mark is an event on a run's time line (a kill, the deletion's start).
type mark struct {
	T    float64 `json:"t"`
	What string  `json:"what"`
}

// tracked is one controller process of a run and what was last read of
// it; a killed process keeps its last values.
type tracked struct {
	p       *proc
	pid     int
	alive   bool
	cpu0    time.Duration // at tracking start
	cpu     time.Duration
	hwm     int64
	rss     int64
	maxPool float64
	last    metricSet
}

// scaleRun measures one scenario.
type scaleRun struct {
	t     *testing.T
	name  string
	n     int
	sim   *hcloudsim.Sim
	count func(context.Context) (counts, error)
	start time.Time

	mu      sync.Mutex
	procs   []*tracked
	phase   string
	leader  func() string
	samples []sample
	marks   []mark
	maxDup  int
	dupUID  string
	dupAt   float64
	latest  counts
	sampleN int
	errs    int
	lastErr string
	prevAcc int64
	prev429 int64
	prevT   time.Time
	prevCPU time.Duration
	cp0     map[string]time.Duration // control plane CPU at start
	self0   time.Duration
	api0    map[string]float64
	// What the API server processes stopped during the run (apiserver)
	// counted and used before they stopped: a new process starts its
	// counters and CPU time from zero.
	apiGone  map[string]float64
	cpuGone  time.Duration
	stop     chan struct{}
	done     chan struct{}
	interval time.Duration
}

func newScaleRun(t *testing.T, name string, n int, sim *hcloudsim.Sim, count func(context.Context) (counts, error)) *scaleRun {
	t.Helper()
	r := &scaleRun{t: t, name: name, n: n, sim: sim, count: count, phase: "setup",
		stop: make(chan struct{}), done: make(chan struct{}), interval: time.Second, cp0: map[string]time.Duration{},
		apiGone: map[string]float64{}}
	return r
}

// track adds a controller process to those measured.
func (r *scaleRun) track(p *proc) {
	cpu, _ := procCPU(p.cmd.Process.Pid)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.procs = append(r.procs, &tracked{p: p, pid: p.cmd.Process.Pid, alive: true, cpu0: cpu, cpu: cpu})
}

// begin takes the baselines (API server writes, CPU of the control plane
// and of this process, the simulator's counts) and starts the sampler.
func (r *scaleRun) begin() {
	r.t.Helper()
	m, err := apiserverMetrics(context.Background())
	if err != nil {
		r.t.Fatalf("the API server's /metrics: %v", err)
	}
	r.api0 = apiWrites(m)
	for comm, pid := range controlPlanePIDs() {
		r.cp0[comm], _ = procCPU(pid)
	}
	r.self0, _ = procCPU(os.Getpid())
	st := r.sim.RequestStats()
	r.start = time.Now()
	r.prevAcc, r.prev429, r.prevT = st.Accepted, st.RateLimited, r.start
	r.prevCPU = r.controllerCPU()
	r.t.Cleanup(r.end)
	go r.loop()
}

// apiServerStopping keeps what the API server process pid has counted
// (its writes) and used (CPU) since the run began, before it is stopped;
// its successor's counters start from zero. Writes between this reading
// and the stop are lost: milliseconds of them.
func (r *scaleRun) apiServerStopping(pid int) error {
	m, err := apiserverMetrics(context.Background())
	if err != nil {
		return err
	}
	for k, v := range apiWrites(m) {
		r.apiGone[k] += v - r.api0[k]
	}
	r.api0 = map[string]float64{}
	cpu, err := procCPU(pid)
	if err != nil {
		return err
	}
	r.cpuGone += cpu - r.cp0["kube-apiserver"]
	r.cp0["kube-apiserver"] = 0
	return nil
}

func (r *scaleRun) setPhase(phase string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase = phase
	r.marks = append(r.marks, mark{T: time.Since(r.start).Seconds(), What: phase})
}

func (r *scaleRun) mark(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.marks = append(r.marks, mark{T: time.Since(r.start).Seconds(), What: what})
}

// end stops the sampler (idempotent).
func (r *scaleRun) end() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}

func (r *scaleRun) loop() {
	defer close(r.done)
	tick := time.NewTicker(r.interval)
	defer tick.Stop()
	for {
		r.sampleOnce()
		select {
		case <-r.stop:
			r.sampleOnce() // the end state
			return
		case <-tick.C:
		}
	}
}

func (r *scaleRun) controllerCPU() time.Duration {
	var total time.Duration
	for _, tp := range r.procs {
		total += tp.cpu - tp.cpu0
	}
	return total
}

// refresh scrapes one process and reads its /proc; called without r.mu.
func refresh(tp *tracked) (ms metricSet, cpu time.Duration, rss, hwm int64, err error) {
	ms, err = scrape(tp.p.metrics)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	cpu, err = procCPU(tp.pid)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	rss, hwm, err = procMem(tp.pid)
	return ms, cpu, rss, hwm, err
}

// apply records what refresh read; called with r.mu held.
func (tp *tracked) apply(ms metricSet, cpu time.Duration, rss, hwm int64) {
	tp.last, tp.cpu, tp.rss = ms, cpu, rss
	tp.hwm = max(tp.hwm, hwm)
	tp.maxPool = max(tp.maxPool, ms.sum("wasmprov_provider_pool_instances", nil))
}

// finalScrape reads a process one last time (before it is killed) and
// stops tracking it as alive.
func (r *scaleRun) finalScrape(p *proc) {
	r.mu.Lock()
	var tp *tracked
	for _, x := range r.procs {
		if x.p == p {
			tp = x
		}
	}
	r.mu.Unlock()
	if tp == nil {
		return
	}
	ms, cpu, rss, hwm, err := refresh(tp)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		tp.apply(ms, cpu, rss, hwm)
	}
	tp.alive = false
}

func (r *scaleRun) sampleOnce() {
	// The clock and the simulator's counts are read after count, which
	// may wait for an API server that is down: the rates below divide by
	// the time between these readings.
	c, cerr := r.count(context.Background())
	now := time.Now()
	st := r.sim.RequestStats()
	live := r.liveProcs()
	type read struct {
		ms       metricSet
		cpu      time.Duration
		rss, hwm int64
		err      error
	}
	reads := make([]read, len(live))
	for i, tp := range live {
		reads[i].ms, reads[i].cpu, reads[i].rss, reads[i].hwm, reads[i].err = refresh(tp)
	}
	leader := ""
	if r.leader != nil {
		leader = r.leader()
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if cerr != nil {
		// The machines could not be listed (in the apiserver scenario,
		// the API server is down): the sample repeats their last count,
		// the servers (counted at the simulator) are current.
		r.errs++
		r.lastErr = cerr.Error()
		c.Objects, c.Ready = r.latest.Objects, r.latest.Ready
	}
	r.latest = c
	if c.MaxServersPerMachine > r.maxDup {
		r.maxDup, r.dupUID, r.dupAt = c.MaxServersPerMachine, c.DupUID, now.Sub(r.start).Seconds()
	}
	var rss float64
	for i, tp := range live {
		if reads[i].err != nil || !tp.alive { // killed meanwhile
			if reads[i].err != nil && tp.alive {
				r.errs++
				r.lastErr = reads[i].err.Error()
			}
			continue
		}
		tp.apply(reads[i].ms, reads[i].cpu, reads[i].rss, reads[i].hwm)
		rss += float64(tp.rss)
	}
	cpu := r.controllerCPU()
	s := sample{
		T: now.Sub(r.start).Seconds(), Phase: r.phase,
		Objects: c.Objects, Ready: c.Ready, Servers: c.Servers, Running: c.Running,
		Throttled:    r.sumLocked("wasmprov_provider_http_throttled_seconds_total", nil),
		ProviderCall: r.sumLocked("wasmprov_provider_calls_total", nil),
		RSSMiB:       rss / (1 << 20),
		Pool:         r.gaugeLocked("wasmprov_provider_pool_instances"),
		Leader:       leader,
	}
	// Rates over the time since the previous sample; the first sample,
	// taken as the run begins, has none.
	if dt := now.Sub(r.prevT).Seconds(); dt >= 0.2 {
		s.CloudRPS = float64(st.Accepted-r.prevAcc) / dt
		s.Cloud429 = float64(st.RateLimited-r.prev429) / dt
		s.CPUPercent = 100 * (cpu - r.prevCPU).Seconds() / dt
	}
	r.prevAcc, r.prev429, r.prevT, r.prevCPU = st.Accepted, st.RateLimited, now, cpu
	r.samples = append(r.samples, s)
}

// sumLocked sums a counter over every process of the run, the killed ones
// at their last reading.
func (r *scaleRun) sumLocked(name string, match map[string]string) float64 {
	total := 0.0
	for _, tp := range r.procs {
		if tp.last != nil {
			total += tp.last.sum(name, match)
		}
	}
	return total
}

// gaugeLocked sums a gauge over the live processes.
func (r *scaleRun) gaugeLocked(name string) float64 {
	total := 0.0
	for _, tp := range r.procs {
		if tp.alive && tp.last != nil {
			total += tp.last.sum(name, nil)
		}
	}
	return total
}

func (r *scaleRun) sum(name string, match map[string]string) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sumLocked(name, match)
}

// byLabel sums a counter by one label over every process of the run.
func (r *scaleRun) byLabel(name, label string) map[string]float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]float64{}
	for _, tp := range r.procs {
		if tp.last == nil {
			continue
		}
		for k, v := range tp.last.by(name, label) {
			out[k] += v
		}
	}
	return out
}

// current is the sampler's latest count.
// liveProcs returns the tracked controller processes still running.
func (r *scaleRun) liveProcs() []*tracked {
	r.mu.Lock()
	defer r.mu.Unlock()
	live := []*tracked{}
	for _, tp := range r.procs {
		if tp.alive {
			live = append(live, tp)
		}
	}
	return live
}

func (r *scaleRun) current() counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.latest
}

// refreshAll reads every live process now (before the figures are taken).
func (r *scaleRun) refreshAll() {
	live := r.liveProcs()
	for _, tp := range live {
		ms, cpu, rss, hwm, err := refresh(tp)
		if err != nil {
			r.t.Logf("reading controller %s: %v", tp.p.id, err)
			continue
		}
		r.mu.Lock()
		tp.apply(ms, cpu, rss, hwm)
		r.mu.Unlock()
	}
}

// waitFor polls cond until it holds or timeout passes; tick (optional)
// runs at each poll, on the test's goroutine (the kill scenario kills
// there). It logs progress every 15 s and returns how long it waited.
func (r *scaleRun) waitFor(timeout time.Duration, what string, cond func() (bool, string), tick func()) time.Duration {
	r.t.Helper()
	start := time.Now()
	every := 500 * time.Millisecond
	if r.n > 100 {
		every = time.Second
	}
	lastLog := start
	for {
		ok, state := cond()
		if ok {
			return time.Since(start)
		}
		if time.Since(lastLog) >= 15*time.Second {
			lastLog = time.Now()
			r.t.Logf("%s: %v: %s", what, time.Since(start).Round(time.Second), state)
		}
		if time.Since(start) > timeout {
			r.t.Fatalf("timed out after %v waiting for %s; last state: %s", timeout, what, state)
		}
		if tick != nil {
			tick()
		}
		time.Sleep(every)
	}
}
