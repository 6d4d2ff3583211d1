// Command report runs the bench module's benchmarks and writes a Markdown
// report: medians over -count runs, ratios computed run by run (each
// contender against native and against wasmprov in the same run) and then
// their median, and every performance target of issue 6 with its measured
// value.
//
//	go run ./cmd/report -count 5 -out ../build/bench/report.md
//	go run ./cmd/report -tags wasmtime ...   # with the wasmtime column (cgo)
//
// Run from the bench directory (make bench-compare does).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	count := flag.Int("count", 5, "go test -count")
	benchtime := flag.String("benchtime", "1s", "go test -benchtime")
	bench := flag.String("bench", ".", "go test -bench")
	out := flag.String("out", "", "Markdown output file (default stdout)")
	raw := flag.String("raw", "", "also keep the raw go test output here")
	from := flag.String("from", "", "parse this raw go test output instead of running")
	tags := flag.String("tags", "", "go test -tags (wasmtime: the wasmtime contender, needs cgo)")
	flag.Parse()

	load0 := loadavg()
	var text string
	if *from != "" {
		b, err := os.ReadFile(*from)
		if err != nil {
			fatal(err)
		}
		text = string(b)
	} else {
		args := []string{"test", "-run", "^$", "-bench", *bench, "-benchmem", "-count", strconv.Itoa(*count), "-benchtime", *benchtime, "-timeout", "3h"}
		if *tags != "" {
			args = append(args, "-tags", *tags)
		}
		args = append(args, ".")
		fmt.Fprintln(os.Stderr, "go", strings.Join(args, " "))
		cmd := exec.Command("go", args...)
		var buf strings.Builder
		cmd.Stdout = io.MultiWriter(&buf, os.Stderr)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fatal(fmt.Errorf("go test: %w", err))
		}
		text = buf.String()
		if *raw != "" {
			_ = os.WriteFile(*raw, []byte(text), 0o644)
		}
	}
	res := parse(text)
	var w strings.Builder
	write(&w, res, *count, *benchtime, *tags, load0, loadavg())
	if *out == "" {
		fmt.Print(w.String())
		return
	}
	if err := os.WriteFile(*out, []byte(w.String()), 0o644); err != nil {
		fatal(err)
	}
	fmt.Fprintln(os.Stderr, "wrote", *out)
}

func fatal(err error) { fmt.Fprintln(os.Stderr, "report:", err); os.Exit(1) }

// results maps "Benchmark/sub" -> unit -> one value per run, in run order.
type results map[string]map[string][]float64

var line = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+(\d+)\s+(.*)$`)

func parse(text string) results {
	r := results{}
	s := bufio.NewScanner(strings.NewReader(text))
	for s.Scan() {
		m := line.FindStringSubmatch(s.Text())
		if m == nil {
			continue
		}
		name := strings.TrimPrefix(m[1], "Benchmark")
		f := strings.Fields(m[4])
		if r[name] == nil {
			r[name] = map[string][]float64{}
		}
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err == nil {
				r[name][f[i+1]] = append(r[name][f[i+1]], v)
			}
		}
	}
	return r
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	c := slices.Clone(v)
	slices.Sort(c)
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

func (r results) med(name, unit string) float64 { return median(r[name][unit]) }

// ratio is the median over runs of a[i]/b[i] (same run, adjacent in time).
func (r results) ratio(a, b, unit string) float64 {
	x, y := r[a][unit], r[b][unit]
	var q []float64
	for i := 0; i < len(x) && i < len(y); i++ {
		if y[i] != 0 {
			q = append(q, x[i]/y[i])
		}
	}
	return median(q)
}

var contenders = []string{"native", "wasmprov", "wasmprov-nointr", "wasmtime", "extism", "goplugin"}

func dur(ns float64) string {
	switch {
	case math.IsNaN(ns):
		return "—"
	case ns < 1e3:
		return fmt.Sprintf("%.0f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	default:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	}
}

func num(v float64, format string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return fmt.Sprintf(format, v)
}

func write(w *strings.Builder, r results, count int, benchtime, tags, load0, load1 string) {
	fmt.Fprintf(w, "## Results\n\n")
	fmt.Fprintf(w, "Machine: %s; %d CPUs (`nproc`); %s; load average %s at start, %s at end.\n", cpuModel(), goruntime.NumCPU(), goruntime.Version(), load0, load1)
	tagArg := ""
	if tags != "" {
		tagArg = " -tags " + tags
	}
	fmt.Fprintf(w, "Generated %s by `cd bench && go run ./cmd/report -count %d -benchtime %s%s` (`make bench-compare`).\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), count, benchtime, tagArg)
	fmt.Fprintf(w, "Every figure is the median over %d runs. *mean* is go test's ns/op (it includes preemption by other tenants of the VM and the guest's GC pauses); *p50* is the median single call within a run. Ratios are computed within each run and their median is shown.\n\n", count)

	for _, sc := range []struct{ bench, title string }{
		{"Empty", "Empty call"},
		{"Validate", "Validate on a realistic Machine (2.5 KB Hetzner manifest)"},
		{"Create", "Create: three loopback HTTP calls through the host"},
	} {
		fmt.Fprintf(w, "### %s\n\n", sc.title)
		fmt.Fprintf(w, "| contender | mean | p50 | allocs/op | mean ÷ native | p50 ÷ native | mean ÷ wasmprov | p50 ÷ wasmprov |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, c := range contenders {
			n := sc.bench + "/" + c
			if r[n] == nil {
				fmt.Fprintf(w, "| %s | not run | | | | | | |\n", c)
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", c,
				dur(r.med(n, "ns/op")), dur(r.med(n, "p50-ns")), num(r.med(n, "allocs/op"), "%.0f"),
				num(r.ratio(n, sc.bench+"/native", "ns/op"), "%.1f×"), num(r.ratio(n, sc.bench+"/native", "p50-ns"), "%.1f×"),
				num(r.ratio(n, sc.bench+"/wasmprov", "ns/op"), "%.2f×"), num(r.ratio(n, sc.bench+"/wasmprov", "p50-ns"), "%.2f×"))
		}
		fmt.Fprintln(w)
	}
	if r["Floor/wazero-export/interruptible=false"] != nil {
		fmt.Fprintf(w, "Floor (a guest export that does nothing, called with wazero directly): %s; with close-on-context-done (interruptible guests): %s.\n\n",
			dur(r.med("Floor/wazero-export/interruptible=false", "ns/op")), dur(r.med("Floor/wazero-export/interruptible=true", "ns/op")))
	}

	if r["CreateHTTPFraming/wazero/http_do"] != nil {
		fmt.Fprintf(w, "### Create: the guest's HTTP over http_do (JSON) and http_do_bin (binary frames)\n\n")
		fmt.Fprintf(w, "| engine | http_do p50 | http_do_bin p50 | http_do_bin ÷ http_do (p50) | (mean) |\n|---|---:|---:|---:|---:|\n")
		for _, e := range []string{"wazero", "wasmtime"} {
			j, b := "CreateHTTPFraming/"+e+"/http_do", "CreateHTTPFraming/"+e+"/http_do_bin"
			if r[j] == nil || r[b] == nil {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", e, dur(r.med(j, "p50-ns")), dur(r.med(b, "p50-ns")),
				num(r.ratio(b, j, "p50-ns"), "%.2f×"), num(r.ratio(b, j, "ns/op"), "%.2f×"))
		}
		fmt.Fprintln(w)
	}

	fmt.Fprintf(w, "### Throughput: Validate from 1, 2, 4, 8 concurrent callers\n\n")
	fmt.Fprintf(w, "| contender | CPU/call (1 caller) | 1 | 2 | 4 | 8 | best ÷ (cores ÷ CPU/call) |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range contenders {
		base := "Throughput/" + c + "/callers="
		if r[base+"1"] == nil {
			continue
		}
		cpu := r.med(base+"1", "cpu-µs/call")
		best := 0.0
		cells := []string{}
		for _, n := range []string{"1", "2", "4", "8"} {
			v := r.med(base+n, "calls/s")
			best = math.Max(best, v)
			cells = append(cells, num(v, "%.0f/s"))
		}
		ideal := float64(goruntime.NumCPU()) / (cpu / 1e6)
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", c, num(cpu, "%.0f µs"), strings.Join(cells, " | "), num(best/ideal*100, "%.0f%%"))
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "### Cold start: process start → first Validate returned\n\n")
	fmt.Fprintf(w, "| contender / cache | wall (parent: exec → result) | load (in child) | first call (in child) |\n|---|---:|---:|---:|\n")
	for _, c := range contenders {
		for _, mode := range []string{"nocache", "warmcache"} {
			n := "ColdStart/" + c + "/" + mode
			if r[n] == nil {
				continue
			}
			fmt.Fprintf(w, "| %s / %s | %s | %s | %s |\n", c, mode, num(r.med(n, "wall-ms"), "%.1f ms"), num(r.med(n, "load-ms"), "%.1f ms"), num(r.med(n, "first-call-ms"), "%.2f ms"))
		}
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "### Memory per ready instance\n\n")
	fmt.Fprintf(w, "| contender | RSS per ready instance | RSS per instance after 200 calls each | linear memory after init | linear memory after 1000 Validate |\n|---|---:|---:|---:|---:|\n")
	for _, c := range contenders {
		n := "Memory/" + c
		if r[n] == nil {
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", c, num(r.med(n, "MiB-RSS/instance"), "%.1f MiB"), num(r.med(n, "MiB-RSS/used-instance"), "%.1f MiB"),
			num(r.med(n, "MiB-linear-init"), "%.1f MiB"), num(r.med(n, "MiB-linear-1000calls"), "%.1f MiB"))
	}
	fmt.Fprintln(w)

	writeTargets(w, r)
}

// writeTargets writes the table of the performance targets (issue 6) with
// what this run measured against each.
func writeTargets(w *strings.Builder, r results) {
	fmt.Fprintf(w, "### Targets (issue 6, wazero engine)\n\n| target | measured | verdict |\n|---|---|---|\n")
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	e50, emean := r.med("Empty/wasmprov", "p50-ns"), r.med("Empty/wasmprov", "ns/op")
	e50n := r.med("Empty/wasmprov-nointr", "p50-ns")
	fmt.Fprintf(w, "| empty call ≤ 2 µs | p50 %s (mean %s); without interruptible guests p50 %s | %s |\n", dur(e50), dur(emean), dur(e50n), verdict(e50 <= 2000))
	v := r.ratio("Validate/wasmprov", "Validate/native", "p50-ns")
	vm := r.ratio("Validate/wasmprov", "Validate/native", "ns/op")
	vn := r.ratio("Validate/wasmprov-nointr", "Validate/native", "p50-ns")
	fmt.Fprintf(w, "| Validate ≤ 3× native | p50 %s (mean %s); without interruptible guests p50 %s | %s |\n", num(v, "%.1f×"), num(vm, "%.1f×"), num(vn, "%.1f×"), verdict(v <= 3))
	cs := r.med("ColdStart/wasmprov/warmcache", "wall-ms")
	fmt.Fprintf(w, "| first call ≤ 50 ms after process start, warm cache | %s (exec → first Validate returned) | %s |\n", num(cs, "%.1f ms"), verdict(cs <= 50))
	rss := r.med("Memory/wasmprov", "MiB-RSS/instance")
	fmt.Fprintf(w, "| ≤ 6 MiB RSS per ready Go-guest instance | %s (after 200 calls each: %s) | %s |\n", num(rss, "%.1f MiB"), num(r.med("Memory/wasmprov", "MiB-RSS/used-instance"), "%.1f MiB"), verdict(rss <= 6))
	cpu := r.med("Throughput/wasmprov/callers=1", "cpu-µs/call")
	best := 0.0
	for _, n := range []string{"2", "4", "8"} {
		best = math.Max(best, r.med("Throughput/wasmprov/callers="+n, "calls/s"))
	}
	eff := best / (float64(goruntime.NumCPU()) / (cpu / 1e6))
	fmt.Fprintf(w, "| throughput ≥ 80%% of cores ÷ CPU per call | %s calls/s vs ideal %s (CPU/call %s) = %s | %s |\n", num(best, "%.0f"), num(float64(goruntime.NumCPU())/(cpu/1e6), "%.0f"), num(cpu, "%.0f µs"), num(eff*100, "%.0f%%"), verdict(eff >= 0.8))
	xe := r.ratio("Empty/extism", "Empty/wasmprov", "p50-ns")
	xg := r.ratio("Empty/goplugin", "Empty/wasmprov", "p50-ns")
	fmt.Fprintf(w, "| empty call ≥ 50× faster than Extism | %s (mean-based %s) | %s |\n", num(xe, "%.1f×"), num(r.ratio("Empty/extism", "Empty/wasmprov", "ns/op"), "%.1f×"), verdict(xe >= 50))
	fmt.Fprintf(w, "| empty call ≥ 100× faster than go-plugin | %s (mean-based %s) | %s |\n", num(xg, "%.1f×"), num(r.ratio("Empty/goplugin", "Empty/wasmprov", "ns/op"), "%.1f×"), verdict(xg >= 100))
	cg := r.ratio("Create/wasmprov", "Create/goplugin", "p50-ns")
	fmt.Fprintf(w, "| Create with host HTTP no slower than go-plugin | wasmprov ÷ go-plugin = %s (mean-based %s) | %s |\n", num(cg, "%.2f×"), num(r.ratio("Create/wasmprov", "Create/goplugin", "ns/op"), "%.2f×"), verdict(cg <= 1))
	fmt.Fprintln(w)
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
