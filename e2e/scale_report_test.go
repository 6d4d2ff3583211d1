//go:build e2e && scale

package e2e

// The figures of a scale run: the summary (t.Logf and, with SCALE_WRITE=1,
// docs/scale/<scenario>.json), the time series (docs/scale/<scenario>.csv)
// and its plot (docs/scale/<scenario>.png), and docs/scale/summary.md, a
// table of every scenario's JSON in the directory.

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// metricNames are the controller metrics a scenario's figures read: the
// Machine controller's or the WasmMachine reconciler's.
type metricNames struct {
	reconciles, creates, deletes string
	// terminal is a family and the labels that select terminal errors.
	terminal      string
	terminalMatch map[string]string
}

var (
	directMetrics = metricNames{
		reconciles: "wasmprov_controller_reconciles_total",
		creates:    "wasmprov_controller_instance_creates_total",
		deletes:    "wasmprov_controller_instance_deletes_total",
		terminal:   "wasmprov_controller_reconciles_total", terminalMatch: map[string]string{"result": "terminal"},
	}
	capiMetrics = metricNames{
		reconciles: "wasmprov_wasmmachine_reconciles_total",
		creates:    "wasmprov_wasmmachine_instance_creates_total",
		deletes:    "wasmprov_wasmmachine_instance_deletes_total",
		terminal:   "wasmprov_wasmmachine_terminal_errors_total",
	}
)

// scaleReport is a scenario's figures, as written to docs/scale/<scenario>.json.
type scaleReport struct {
	Scenario        string            `json:"scenario"`
	N               int               `json:"n"`
	Date            string            `json:"date"`
	Env             map[string]string `json:"env"`
	ControllerFlags []string          `json:"controller_flags"`
	Cloud           string            `json:"cloud"`
	Policy          string            `json:"policy,omitempty"`
	Host            hostInfo          `json:"host"`

	// SubmitSeconds: the test's N creations (or its scale request) took
	// this long; UpSeconds and DownSeconds count from their start.
	SubmitSeconds float64 `json:"submit_seconds"`
	UpSeconds     float64 `json:"up_seconds"`
	DownSeconds   float64 `json:"down_seconds"`
	// From the samples (1 s apart): the first machine provisioned, half
	// of them, every server running, after the up ramp started; every
	// server gone after the down ramp started (the Machines' finalizers
	// come off after that).
	FirstReadySeconds  float64 `json:"first_ready_seconds"`
	HalfReadySeconds   float64 `json:"half_ready_seconds"`
	AllRunningSeconds  float64 `json:"all_servers_running_seconds"`
	ServersGoneSeconds float64 `json:"servers_gone_seconds"`

	ProviderCalls           float64            `json:"provider_calls"`
	ProviderCallsPerMachine float64            `json:"provider_calls_per_machine"`
	ProviderCallsByMethod   map[string]float64 `json:"provider_calls_by_method"`

	// APIWrites: the API server's writes (apiserver_request_total, verbs
	// POST PUT PATCH DELETE APPLY DELETECOLLECTION) during the run, by
	// resource and verb, and those of them that failed; leases (leader election, the API server's own) are left
	// out of APIWritesTotal, and so are the test's own writes (TestWrites:
	// its creations and deletions) from APIWritesPerMachine.
	APIWrites           map[string]float64 `json:"api_writes_by_resource"`
	APIWritesTotal      float64            `json:"api_writes_total"`
	TestWrites          int                `json:"test_writes"`
	APIWritesPerMachine float64            `json:"api_writes_per_machine"`
	// ControllerWrites: the wasmprov controllers' own writes, from their
	// client's rest_client_requests_total (leader election included).
	ControllerWrites           float64 `json:"controller_writes"`
	ControllerWritesPerMachine float64 `json:"controller_writes_per_machine"`
	// ControllerRequests: all their client's requests (reads too), which
	// -kube-api-qps paces.
	ControllerRequests           float64 `json:"controller_requests"`
	ControllerRequestsPerMachine float64 `json:"controller_requests_per_machine"`

	CloudRequests           int64   `json:"cloud_requests"`
	CloudRequestsPerMachine float64 `json:"cloud_requests_per_machine"`
	CloudRateLimited        int64   `json:"cloud_429"`
	CloudErrors             int64   `json:"cloud_5xx"`
	CloudDropped            int64   `json:"cloud_dropped"`
	CloudLostAnswers        int64   `json:"cloud_lost_answers"`
	CloudAbandoned          int64   `json:"cloud_abandoned"`
	CloudMaxPerSecond       int     `json:"cloud_max_accepted_per_second"`

	ThrottledSeconds  float64 `json:"throttled_seconds"`
	HTTP429Seen       float64 `json:"provider_http_429"`
	DeadlineRefusals  float64 `json:"provider_http_deadline_refusals"`
	PeakRSSMiB        float64 `json:"controller_peak_rss_mib"`
	CPUSeconds        float64 `json:"controller_cpu_seconds"`
	PoolInstancesPeak float64 `json:"pool_instances_peak"`

	Creates         float64 `json:"instance_creates"`
	Deletes         float64 `json:"instance_deletes"`
	Reconciles      float64 `json:"reconciles"`
	ReconcileErrors float64 `json:"reconcile_errors"`
	TerminalErrors  float64 `json:"terminal_errors"`
	UpdateConflicts float64 `json:"update_conflicts"`

	// ProviderCallErrors: wasmprov_provider_call_errors_total by class;
	// ProviderCallRetries: calls that reached a version a reload had
	// closed and were sent to the new one (not failures).
	ProviderCallErrors  map[string]float64 `json:"provider_call_errors_by_class,omitempty"`
	ProviderCallRetries float64            `json:"provider_call_retries"`

	Controllers          int            `json:"controller_processes"`
	Kills                []mark         `json:"kills,omitempty"`
	Restarts             []apiRestart   `json:"apiserver_restarts,omitempty"`
	Swaps                []providerSwap `json:"provider_swaps,omitempty"`
	MaxServersPerMachine int            `json:"max_servers_per_machine"`
	ControlPlaneCPU      float64        `json:"apiserver_etcd_cpu_seconds"`
	TestProcessCPU       float64        `json:"test_process_cpu_seconds"`
	Marks                []mark         `json:"marks"`
	Invariants           []string       `json:"invariants"`
}

// finish stops the sampler and computes the figures.
func (r *scaleRun) finish(names metricNames, rep *scaleReport) {
	r.t.Helper()
	r.refreshAll()
	r.end()
	m, err := apiserverMetrics(context.Background())
	if err != nil {
		r.t.Fatalf("the API server's /metrics: %v", err)
	}
	writes := apiWrites(m)
	for k := range r.apiGone {
		if _, ok := writes[k]; !ok { // only the stopped API servers wrote it
			writes[k] = 0
		}
	}
	rep.APIWrites = map[string]float64{}
	for k, v := range writes {
		if d := v - r.api0[k] + r.apiGone[k]; d > 0 {
			rep.APIWrites[k] = d
			if !strings.Contains(k, "/leases ") && !strings.Contains(k, " failed ") {
				rep.APIWritesTotal += d
			}
		}
	}
	n := float64(r.n)
	rep.APIWritesPerMachine = (rep.APIWritesTotal - float64(rep.TestWrites)) / n
	for comm, pid := range controlPlanePIDs() {
		c, _ := procCPU(pid)
		rep.ControlPlaneCPU += (c - r.cp0[comm]).Seconds()
	}
	rep.ControlPlaneCPU += r.cpuGone.Seconds()
	self, _ := procCPU(os.Getpid())
	rep.TestProcessCPU = (self - r.self0).Seconds()

	st := r.sim.RequestStats()
	rep.CloudRequests, rep.CloudRateLimited, rep.CloudErrors = st.Accepted, st.RateLimited, st.Errors
	rep.CloudDropped, rep.CloudAbandoned, rep.CloudMaxPerSecond = st.Dropped, st.Abandoned, st.MaxAcceptedPerSecond
	rep.CloudLostAnswers = st.LostAnswers
	rep.CloudRequestsPerMachine = float64(st.Accepted) / n

	rep.ProviderCalls = r.sum("wasmprov_provider_calls_total", nil)
	rep.ProviderCallsPerMachine = rep.ProviderCalls / n
	rep.ProviderCallsByMethod = r.byLabel("wasmprov_provider_calls_total", "method")
	rep.ProviderCallErrors = r.byLabel("wasmprov_provider_call_errors_total", "class")
	rep.ProviderCallRetries = r.sum("wasmprov_provider_call_retries_total", nil)
	for method, v := range r.byLabel("rest_client_requests_total", "method") {
		if writeVerbs[method] {
			rep.ControllerWrites += v
		}
		rep.ControllerRequests += v
	}
	rep.ControllerWritesPerMachine = rep.ControllerWrites / n
	rep.ControllerRequestsPerMachine = rep.ControllerRequests / n
	rep.ThrottledSeconds = r.sum("wasmprov_provider_http_throttled_seconds_total", nil)
	rep.HTTP429Seen = r.sum("wasmprov_provider_http_429_total", nil)
	rep.DeadlineRefusals = r.sum("wasmprov_provider_http_deadline_refusals_total", nil)
	rep.Creates = r.sum(names.creates, nil)
	rep.Deletes = r.sum(names.deletes, nil)
	rep.Reconciles = r.sum(names.reconciles, nil)
	rep.ReconcileErrors = r.sum(names.reconciles, map[string]string{"result": "error"})
	rep.TerminalErrors = r.sum(names.terminal, names.terminalMatch)
	rep.UpdateConflicts = r.sum("wasmprov_controller_update_conflicts_total", nil)

	r.mu.Lock()
	var peak int64
	for _, tp := range r.procs {
		peak = max(peak, tp.hwm)
		rep.PoolInstancesPeak = max(rep.PoolInstancesPeak, tp.maxPool)
	}
	rep.PeakRSSMiB = float64(peak) / (1 << 20)
	rep.CPUSeconds = r.controllerCPU().Seconds()
	rep.Controllers = len(r.procs)
	rep.MaxServersPerMachine = r.maxDup
	rep.Marks = append([]mark(nil), r.marks...)
	rep.milestones(r.samples, r.marks, r.n)
	for _, mk := range r.marks {
		if strings.HasPrefix(mk.What, "kill") {
			rep.Kills = append(rep.Kills, mk)
		}
	}
	if r.errs > 0 {
		r.t.Logf("sampler: %d failed readings, the last: %s", r.errs, r.lastErr)
	}
	r.mu.Unlock()

	rep.Scenario, rep.N = r.name, r.n
	rep.Date = r.start.UTC().Format(time.RFC3339)
	rep.Host = readHostInfo()
	rep.Env = map[string]string{}
	for _, k := range []string{"SCALE_N", "SCALE_FAULT_N", "SCALE_SCENARIOS", "SCALE_FLAGS", "SCALE_KILL_EVERY", "SCALE_DIR", "E2E_RACE"} {
		if v := os.Getenv(k); v != "" {
			rep.Env[k] = v
		}
	}
	r.t.Logf("%s", rep.text())
}

// milestones finds the ramps' milestones in the samples.
func (rep *scaleReport) milestones(samples []sample, marks []mark, n int) {
	phaseStart := map[string]float64{}
	for _, m := range marks {
		if m.What == "up" || m.What == "down" {
			phaseStart[m.What] = m.T
		}
	}
	// A milestone the samples of its phase never saw was reached between
	// the last of them and the ramp's end, which the test saw.
	first := func(phase string, end float64, cond func(sample) bool) float64 {
		for _, s := range samples {
			if s.Phase == phase && cond(s) {
				return round(min(s.T-phaseStart[phase], end), 1)
			}
		}
		return round(end, 1)
	}
	rep.FirstReadySeconds = first("up", rep.UpSeconds, func(s sample) bool { return s.Ready >= 1 })
	rep.HalfReadySeconds = first("up", rep.UpSeconds, func(s sample) bool { return 2*s.Ready >= n })
	rep.AllRunningSeconds = first("up", rep.UpSeconds, func(s sample) bool { return s.Running >= n })
	rep.ServersGoneSeconds = first("down", rep.DownSeconds, func(s sample) bool { return s.Servers == 0 })
}

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}

// text is the report for the test log.
func (rep *scaleReport) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "scale %s, N=%d (%d controller processes", rep.Scenario, rep.N, rep.Controllers)
	if len(rep.Kills) > 0 {
		fmt.Fprintf(&b, ", %d kills", len(rep.Kills))
	}
	fmt.Fprintf(&b, ")\n")
	fmt.Fprintf(&b, "  up %.1fs (submitted in %.1fs; first provisioned at %.0fs, half at %.0fs, every server running at %.0fs), down %.1fs (servers gone at %.0fs)\n",
		rep.UpSeconds, rep.SubmitSeconds, rep.FirstReadySeconds, rep.HalfReadySeconds, rep.AllRunningSeconds, rep.DownSeconds, rep.ServersGoneSeconds)
	fmt.Fprintf(&b, "  provider calls %.0f (%.2f/machine) %v; failed by class %v; sent to a new version %.0f\n", rep.ProviderCalls,
		rep.ProviderCallsPerMachine, rep.ProviderCallsByMethod, rep.ProviderCallErrors, rep.ProviderCallRetries)
	for _, x := range rep.Restarts {
		fmt.Fprintf(&b, "  kube-apiserver killed at %.1fs (%s ramp, %.0f%% done), answering again after %.1fs\n",
			x.At, x.Phase, 100*x.Progress, x.DownSeconds)
	}
	for i, x := range rep.Swaps {
		fmt.Fprintf(&b, "  provider v%d (sha256 %.12s) written at %.1fs (%s ramp, %.0f%% done), serving after %.2fs, %.0f calls after (pool %.0f)\n",
			i+1, x.SHA256, x.At, x.Phase, 100*x.Progress, x.ServingSeconds, x.CallsAfter, x.PoolSize)
	}
	fmt.Fprintf(&b, "  API writes %.0f without leases, %d by the test, %.2f/machine by the controllers; wasmprov's client: %.0f writes (%.2f/machine) of %.0f requests (%.2f/machine)\n",
		rep.APIWritesTotal, rep.TestWrites, rep.APIWritesPerMachine, rep.ControllerWrites, rep.ControllerWritesPerMachine,
		rep.ControllerRequests, rep.ControllerRequestsPerMachine)
	keys := make([]string, 0, len(rep.APIWrites))
	for k := range rep.APIWrites {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "    %s %.0f\n", k, rep.APIWrites[k])
	}
	fmt.Fprintf(&b, "  cloud: %d requests (%.2f/machine), at most %d in a second; 429 %d, 5xx %d, dropped %d, answers lost after taking effect %d, abandoned %d\n",
		rep.CloudRequests, rep.CloudRequestsPerMachine, rep.CloudMaxPerSecond, rep.CloudRateLimited, rep.CloudErrors, rep.CloudDropped, rep.CloudLostAnswers, rep.CloudAbandoned)
	fmt.Fprintf(&b, "  host pacing: throttled %.1fs, 429 seen %.0f, deadline refusals %.0f\n", rep.ThrottledSeconds, rep.HTTP429Seen, rep.DeadlineRefusals)
	fmt.Fprintf(&b, "  controller: peak RSS %.0f MiB, CPU %.1fs, pool instances at peak %.0f\n", rep.PeakRSSMiB, rep.CPUSeconds, rep.PoolInstancesPeak)
	fmt.Fprintf(&b, "  creates %.0f, deletes %.0f, reconciles %.0f (errors %.0f, terminal %.0f), update conflicts %.0f, max servers per machine %d\n",
		rep.Creates, rep.Deletes, rep.Reconciles, rep.ReconcileErrors, rep.TerminalErrors, rep.UpdateConflicts, rep.MaxServersPerMachine)
	fmt.Fprintf(&b, "  CPU elsewhere: kube-apiserver+etcd %.1fs, test process (simulator, Cluster API) %.1fs", rep.ControlPlaneCPU, rep.TestProcessCPU)
	return b.String()
}

// scaleDir is where SCALE_WRITE=1 writes: SCALE_DIR (relative to the
// repository's root), default docs/scale.
func scaleDir() string {
	if d := os.Getenv("SCALE_DIR"); d != "" {
		if filepath.IsAbs(d) {
			return d
		}
		return filepath.Join(root, d)
	}
	return filepath.Join(root, "docs", "scale")
}

// write writes the report, the time series and its plot.
func (r *scaleRun) write(rep *scaleReport) {
	r.t.Helper()
	dir := scaleDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.t.Fatal(err)
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, r.name+".json"), append(b, '\n'), 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	samples := append([]sample(nil), r.samples...)
	marks := append([]mark(nil), r.marks...)
	r.mu.Unlock()
	if err := writeCSV(filepath.Join(dir, r.name+".csv"), samples); err != nil {
		r.t.Fatal(err)
	}
	title := fmt.Sprintf("%s, N=%d", r.name, r.n)
	if err := plotRun(filepath.Join(dir, r.name+".png"), title, samples, marks); err != nil {
		r.t.Fatal(err)
	}
	r.t.Logf("wrote %s/%s.{json,csv,png}", dir, r.name)
}

func writeCSV(path string, samples []sample) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"t_seconds", "phase", "machines", "machines_ready", "servers", "servers_running",
		"cloud_requests_per_second", "cloud_429_per_second", "throttled_seconds_total", "provider_calls_total",
		"controller_rss_mib", "controller_cpu_percent", "pool_instances", "leader"})
	ff := func(v float64) string { return strconv.FormatFloat(round(v, 2), 'f', -1, 64) }
	for _, s := range samples {
		_ = w.Write([]string{ff(s.T), s.Phase, strconv.Itoa(s.Objects), strconv.Itoa(s.Ready), strconv.Itoa(s.Servers),
			strconv.Itoa(s.Running), ff(s.CloudRPS), ff(s.Cloud429), ff(s.Throttled), ff(s.ProviderCall),
			ff(s.RSSMiB), ff(s.CPUPercent), ff(s.Pool), s.Leader})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// plotRun draws the time series in five panels: machines and servers,
// cloud requests per second, the controllers' RSS, their CPU, and the
// seconds requests waited for the host's pacing; the marks (phases,
// kills) are dashed vertical lines, named in the first panel. Each
// panel's title names its lines' colours (a legend would hide lines).
func plotRun(path, title string, samples []sample, marks []mark) error {
	type series struct {
		name string
		y    func(sample) float64
	}
	panels := []struct {
		title, ylabel string
		lines         []series
	}{
		{title + ": machines", "count", []series{
			{"machines", func(s sample) float64 { return float64(s.Objects) }},
			{"provisioned", func(s sample) float64 { return float64(s.Ready) }},
			{"servers running", func(s sample) float64 { return float64(s.Running) }},
		}},
		{"cloud API requests", "per second", []series{
			{"accepted", func(s sample) float64 { return s.CloudRPS }},
			{"429", func(s sample) float64 { return s.Cloud429 }},
		}},
		{"controller memory", "MiB", []series{
			{"RSS, summed over the live controller processes", func(s sample) float64 { return s.RSSMiB }},
		}},
		{"controller CPU", "% of a core", []series{
			{"user+system, summed over the controller processes", func(s sample) float64 { return s.CPUPercent }},
		}},
		{"host pacing", "seconds, cumulative", []series{
			{"time requests waited", func(s sample) float64 { return s.Throttled }},
		}},
	}
	colors := []struct {
		name string
		c    color.Color
	}{
		{"blue", color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}},
		{"red", color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}},
		{"green", color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}},
	}
	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := plot.New()
		p.Y.Label.Text = pn.ylabel
		if i == len(panels)-1 {
			p.X.Label.Text = "seconds since the run started"
		}
		ymax := 1.0
		var legend []string
		for j, l := range pn.lines {
			xys := make(plotter.XYs, len(samples))
			for k, s := range samples {
				xys[k] = plotter.XY{X: s.T, Y: l.y(s)}
				ymax = max(ymax, xys[k].Y)
			}
			line, err := plotter.NewLine(xys)
			if err != nil {
				return err
			}
			line.Color = colors[j%len(colors)].c
			line.Width = vg.Points(1.2)
			p.Add(line)
			if len(pn.lines) > 1 {
				legend = append(legend, l.name+" ("+colors[j%len(colors)].name+")")
			} else {
				legend = append(legend, l.name)
			}
		}
		p.Title.Text = pn.title + ": " + strings.Join(legend, ", ")
		if err := addMarks(p, marks, ymax, i == 0); err != nil {
			return err
		}
		p.Y.Min = 0
		p.Y.Max = ymax * 1.05
		p.Add(plotter.NewGrid())
		plots[i] = []*plot.Plot{p}
	}
	img := vgimg.New(vg.Points(720), vg.Points(170*float64(len(panels))))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadX: vg.Points(4), PadY: vg.Points(8),
		PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// markEvents are the marks drawn as dotted lines apart from the phases,
// unlabelled (they can be many) but counted in the first panel's title
// (those with a name).
var markEvents = []struct {
	prefix, name string
	c            color.Color
}{
	{"kill", "leader kills (dotted pink)", color.RGBA{R: 0xe0, G: 0x90, B: 0x90, A: 0xff}},
	{"apiserver stopped", "API server restarts (dotted: orange stopped, teal back)", color.RGBA{R: 0xff, G: 0x8c, B: 0x00, A: 0xff}},
	{"apiserver up", "", color.RGBA{R: 0x00, G: 0x99, B: 0x99, A: 0xff}},
	{"swap to", "new provider versions (dotted: purple written, brown serving)", color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}},
	{"serving", "", color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}},
}

// addMarks draws the marks as vertical lines of a panel: the phases
// dashed grey and, in the first panel (first), named at the top; the
// markEvents dotted in their colour, counted in the first panel's title.
func addMarks(p *plot.Plot, marks []mark, ymax float64, first bool) error {
	counts := make([]int, len(markEvents))
	var xyl plotter.XYLabels
	for _, mk := range marks {
		v, err := plotter.NewLine(plotter.XYs{{X: mk.T, Y: 0}, {X: mk.T, Y: ymax}})
		if err != nil {
			return err
		}
		v.Color = color.Gray{Y: 0x60}
		v.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		event := false
		for j, e := range markEvents {
			if strings.HasPrefix(mk.What, e.prefix) {
				counts[j]++
				v.Color, v.Dashes, event = e.c, []vg.Length{vg.Points(1), vg.Points(2)}, true
				break
			}
		}
		p.Add(v)
		if !event {
			xyl.XYs = append(xyl.XYs, plotter.XY{X: mk.T, Y: ymax})
			xyl.Labels = append(xyl.Labels, " "+mk.What)
		}
	}
	if !first {
		return nil
	}
	for j, e := range markEvents {
		if counts[j] > 0 && e.name != "" {
			p.Title.Text += fmt.Sprintf("; %d %s", counts[j], e.name)
		}
	}
	if len(xyl.XYs) == 0 {
		return nil
	}
	labels, err := plotter.NewLabels(xyl)
	if err != nil {
		return err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].YAlign = draw.YTop
	}
	p.Add(labels)
	return nil
}

// replot draws the plot of every scenario in the output directory again
// from its CSV and JSON, and derives the milestones again (SCALE_REPLOT=1:
// after a change of plotRun or milestones, without running the scenarios
// again).
func replot() error {
	dir := scaleDir()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var rep scaleReport
		if err := json.Unmarshal(raw, &rep); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		base := strings.TrimSuffix(f, ".json")
		samples, err := readCSV(base + ".csv")
		if err != nil {
			return err
		}
		rep.milestones(samples, rep.Marks, rep.N)
		out, err := json.MarshalIndent(&rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(f, append(out, '\n'), 0o644); err != nil {
			return err
		}
		if err := plotRun(base+".png", fmt.Sprintf("%s, N=%d", rep.Scenario, rep.N), samples, rep.Marks); err != nil {
			return err
		}
	}
	return nil
}

// readCSV reads what writeCSV wrote.
func readCSV(path string) ([]sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []sample
	for i, r := range rows {
		if i == 0 {
			continue
		}
		if len(r) != 14 {
			return nil, fmt.Errorf("%s:%d: %d columns", path, i+1, len(r))
		}
		fl := func(j int) float64 { v, _ := strconv.ParseFloat(r[j], 64); return v }
		it := func(j int) int { v, _ := strconv.Atoi(r[j]); return v }
		out = append(out, sample{T: fl(0), Phase: r[1], Objects: it(2), Ready: it(3), Servers: it(4), Running: it(5),
			CloudRPS: fl(6), Cloud429: fl(7), Throttled: fl(8), ProviderCall: fl(9), RSSMiB: fl(10), CPUPercent: fl(11),
			Pool: fl(12), Leader: r[13]})
	}
	return out, nil
}

// disruptions names what the scenario did to the system: "27 kills",
// "3 API server restarts", "2 provider swaps"; "" for none.
func (rep *scaleReport) disruptions() string {
	var out []string
	for _, d := range []struct {
		n    int
		what string
	}{{len(rep.Kills), "kills"}, {len(rep.Restarts), "API server restarts"}, {len(rep.Swaps), "provider swaps"}} {
		if d.n > 0 {
			out = append(out, fmt.Sprintf("%d %s", d.n, d.what))
		}
	}
	return strings.Join(out, ", ")
}

// writeSummary writes docs/scale/summary.md, one row per scenario JSON
// in docs/scale.
func writeSummary() error {
	dir := scaleDir()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	var b strings.Builder
	b.WriteString("<!-- written by TestScale (SCALE_WRITE=1) from the JSON files beside it; docs/SCALE.md explains the columns -->\n\n")
	b.WriteString("| scenario | N | up s | first provisioned s | down s | servers gone s | provider calls / machine | cloud requests / machine | wasmprov API writes / machine | wasmprov API requests / machine | all controllers' API writes / machine | cloud max req/s | 429 | 5xx + dropped | throttled s | peak RSS MiB | controller CPU s | pool peak | disruptions |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r scaleReport
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.0f | %.1f | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %d | %d | %d | %.1f | %.0f | %.1f | %.0f | %s |\n",
			r.Scenario, r.N, r.UpSeconds, r.FirstReadySeconds, r.DownSeconds, r.ServersGoneSeconds,
			r.ProviderCallsPerMachine, r.CloudRequestsPerMachine, r.ControllerWritesPerMachine, r.ControllerRequestsPerMachine,
			r.APIWritesPerMachine, r.CloudMaxPerSecond, r.CloudRateLimited, r.CloudErrors+r.CloudDropped, r.ThrottledSeconds,
			r.PeakRSSMiB, r.CPUSeconds, r.PoolInstancesPeak, r.disruptions())
	}
	return os.WriteFile(filepath.Join(dir, "summary.md"), []byte(b.String()), 0o644)
}
