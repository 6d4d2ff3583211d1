package bench_test

// Side-by-side benchmarks of benchprov through each plugin mechanism. See
// README.md for how to run them and docs/BENCHMARKS.md for results.
//
//	go test -run '^$' -bench . -count 5 .

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/bench/benchprov"
	"github.com/wasmprov/wasmprov/bench/internal/contenders"
	"github.com/wasmprov/wasmprov/bench/internal/direct"
	"github.com/wasmprov/wasmprov/bench/internal/fakecloud"
	"github.com/wasmprov/wasmprov/bench/internal/fixture"
)

var (
	cloudSrv *fakecloud.Server
	machine  *clusterv1alpha1.Machine

	liveMu sync.Mutex
	live   = map[string]contenders.Contender{}
)

func TestMain(m *testing.M) {
	cloudSrv = fakecloud.Start()
	machine = fixture.Machine(cloudSrv.URL)
	code := m.Run()
	for _, c := range live {
		_ = c.Close()
	}
	cloudSrv.Close()
	os.Exit(code)
}

// get returns the contender name serving callers concurrent callers,
// created once per process.
func get(tb testing.TB, name string, callers int) contenders.Contender {
	tb.Helper()
	key := fmt.Sprintf("%s/%d", name, callers)
	liveMu.Lock()
	defer liveMu.Unlock()
	if c, ok := live[key]; ok {
		return c
	}
	spec, ok := contenders.Lookup(name)
	if !ok {
		tb.Fatalf("unknown contender %s", name)
	}
	u, _ := url.Parse(cloudSrv.URL)
	c, err := spec.New(context.Background(), contenders.Options{
		CacheDir:    contenders.CompilationCacheDir("bench"),
		Callers:     callers,
		AllowedHost: u.Host,
	})
	if errors.Is(err, contenders.ErrUnavailable) {
		tb.Skipf("%s: %v", name, err)
	}
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	live[key] = c
	return c
}

func names() []string {
	var ns []string
	for _, s := range contenders.All() {
		ns = append(ns, s.Name)
	}
	return ns
}

func TestContenders(t *testing.T) {
	ctx := context.Background()
	bad := machine.DeepCopy()
	bad.Spec.ProviderSpec.Value.Raw = []byte(`{"cloudProvider":"hetzner","operatingSystem":"ubuntu","cloudProviderSpec":{}}`)
	for _, name := range names() {
		t.Run(name, func(t *testing.T) {
			c := get(t, name, 1)
			if err := c.Empty(ctx); err != nil {
				t.Fatalf("empty: %v", err)
			}
			if err := c.Validate(ctx, &machine.Spec); err != nil {
				t.Fatalf("validate: %v", err)
			}
			if err := c.Validate(ctx, &bad.Spec); err == nil {
				t.Fatal("validate accepted an invalid spec")
			}
			before := cloudSrv.Requests.Load()
			if err := c.Create(ctx, machine); err != nil {
				t.Fatalf("create: %v", err)
			}
			if got := cloudSrv.Requests.Load() - before; got != 3 {
				t.Fatalf("create made %d HTTP requests, want 3", got)
			}
		})
	}
}

// reportP50 reports the median call latency. ns/op is a mean, which on a
// shared VM includes every preemption by other tenants; the median is the
// robust per-call figure.
// timeCreate runs c's Create for the benchmark's loop and reports its p50.
func timeCreate(ctx context.Context, b *testing.B, c contenders.Contender, machine *clusterv1alpha1.Machine) {
	b.ReportAllocs()
	lat := make([]time.Duration, 0, 1024)
	for b.Loop() {
		t := time.Now()
		if err := c.Create(ctx, machine); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	reportP50(b, lat)
}

func reportP50(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
}

func BenchmarkEmpty(b *testing.B) {
	ctx := context.Background()
	for _, name := range names() {
		b.Run(name, func(b *testing.B) {
			c := get(b, name, 1)
			b.ReportAllocs()
			lat := make([]time.Duration, 0, 1024)
			for b.Loop() {
				t := time.Now()
				if err := c.Empty(ctx); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			reportP50(b, lat)
		})
	}
}

func BenchmarkValidate(b *testing.B) {
	ctx := context.Background()
	for _, name := range names() {
		b.Run(name, func(b *testing.B) {
			c := get(b, name, 1)
			b.ReportAllocs()
			lat := make([]time.Duration, 0, 1024)
			for b.Loop() {
				t := time.Now()
				if err := c.Validate(ctx, &machine.Spec); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			reportP50(b, lat)
		})
	}
}

func BenchmarkCreate(b *testing.B) {
	ctx := context.Background()
	for _, name := range names() {
		b.Run(name, func(b *testing.B) {
			timeCreate(ctx, b, get(b, name, 1), machine)
		})
	}
}

// framings are the two guests of BenchmarkCreateHTTPFraming: the same
// benchprov guest with hosthttp over http_do_bin (the SDK's default) and
// over http_do's JSON (the SDK before http_do_bin).
var framings = []struct{ name, pkg string }{
	{"http_do", contenders.WasmprovGuestJSONHTTP},
	{"http_do_bin", contenders.WasmprovGuest},
}

// framingEngines are the engines BenchmarkCreateHTTPFraming runs on
// (wasmtime only in binaries built with -tags wasmtime).
var framingEngines = []struct {
	name     string
	wasmtime bool
}{{"wazero", false}, {"wasmtime", true}}

// framingGuest returns the wasmprov contender running guest pkg on the
// engine, created once per process.
func framingGuest(tb testing.TB, pkg string, wasmtime bool) contenders.Contender {
	tb.Helper()
	liveMu.Lock()
	defer liveMu.Unlock()
	key := fmt.Sprintf("framing/%s/%v", pkg, wasmtime)
	if c, ok := live[key]; ok {
		return c
	}
	u, _ := url.Parse(cloudSrv.URL)
	c, err := contenders.NewWasmprovGuest(context.Background(), contenders.Options{
		CacheDir: contenders.CompilationCacheDir("bench"), Callers: 1, AllowedHost: u.Host,
	}, pkg, wasmtime)
	if errors.Is(err, contenders.ErrUnavailable) {
		tb.Skipf("%s: %v", pkg, err)
	}
	if err != nil {
		tb.Fatalf("%s: %v", pkg, err)
	}
	live[key] = c
	return c
}

// TestCreateHTTPFraming: both guests of the A/B create the instance with
// three requests.
func TestCreateHTTPFraming(t *testing.T) {
	for _, e := range framingEngines {
		for _, f := range framings {
			t.Run(e.name+"/"+f.name, func(t *testing.T) {
				c := framingGuest(t, f.pkg, e.wasmtime)
				before := cloudSrv.Requests.Load()
				if err := c.Create(context.Background(), machine); err != nil {
					t.Fatalf("create: %v", err)
				}
				if got := cloudSrv.Requests.Load() - before; got != 3 {
					t.Fatalf("create made %d HTTP requests, want 3", got)
				}
			})
		}
	}
}

// BenchmarkCreateHTTPFraming is BenchmarkCreate/wasmprov (interruptible
// guests) with the guest's HTTP over http_do (JSON, base64 bodies) and
// over http_do_bin (binary frames), in the same run, on wazero and (with
// -tags wasmtime) wasmtime: what the framing alone is worth on a whole
// call.
func BenchmarkCreateHTTPFraming(b *testing.B) {
	ctx := context.Background()
	for _, e := range framingEngines {
		for _, f := range framings {
			b.Run(e.name+"/"+f.name, func(b *testing.B) {
				timeCreate(ctx, b, framingGuest(b, f.pkg, e.wasmtime), machine)
			})
		}
	}
}

// cpuTime is the CPU time of this process and of the contender's
// subprocess, if any.
func cpuTime(c contenders.Contender) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	d := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if sp, ok := c.(contenders.Subprocess); ok && sp.PID() > 0 {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", sp.PID())); err == nil {
			s := string(b)
			f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
			ut, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			d += time.Duration(ut+st) * 10 * time.Millisecond // CLK_TCK = 100
		}
	}
	return d
}

// BenchmarkThroughput runs Validate from 1, 2, 4 and 8 concurrent callers.
// ns/op is wall time per call (1/throughput); calls/s and CPU time per call
// (this process plus the plugin process) are reported as metrics.
func BenchmarkThroughput(b *testing.B) {
	ctx := context.Background()
	for _, name := range names() {
		for _, callers := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("%s/callers=%d", name, callers), func(b *testing.B) {
				c := get(b, name, callers)
				for range callers { // every instance ready and warm
					_ = c.Validate(ctx, &machine.Spec)
				}
				var next atomic.Int64
				var failed atomic.Value
				var wg sync.WaitGroup
				cpu0 := cpuTime(c)
				b.ResetTimer()
				start := time.Now()
				for range callers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for next.Add(1) <= int64(b.N) {
							if err := c.Validate(ctx, &machine.Spec); err != nil {
								failed.Store(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				el := time.Since(start)
				b.StopTimer()
				if err := failed.Load(); err != nil {
					b.Fatal(err)
				}
				cpu := cpuTime(c) - cpu0
				b.ReportMetric(float64(b.N)/el.Seconds(), "calls/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/call")
			})
		}
	}
}

// probe runs the coldstart subprocess and decodes its JSON line; wall is
// the time from starting the process to reading that line.
func probe(b *testing.B, args ...string) (map[string]float64, time.Duration) {
	b.Helper()
	bin, err := contenders.Build(contenders.ColdStart)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), contenders.PrebuiltEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadBytes('\n')
	wall := time.Since(start)
	if werr := cmd.Wait(); err != nil || werr != nil {
		b.Fatalf("%v: %v %v", args, err, werr)
	}
	res := map[string]float64{}
	if err := json.Unmarshal(line, &res); err != nil {
		b.Fatalf("%v: %q: %v", args, line, err)
	}
	return res, wall
}

// prebuild builds what a subprocess needs, outside the timed region. A
// contender not built into this binary (wasmtime without -tags wasmtime) is
// skipped: cmd/coldstart is built with the same tags, so it lacks it too.
func prebuild(b *testing.B, name string) {
	b.Helper()
	if spec, ok := contenders.Lookup(name); ok && !spec.Available() {
		b.Skipf("%s: %v", name, contenders.ErrUnavailable)
	}
	for _, pkg := range []string{contenders.ColdStart, contenders.WasmprovGuest, contenders.ExtismGuest, contenders.GoPluginBin} {
		if _, err := contenders.Build(pkg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkColdStart measures, in a new process each time, from process
// start to the end of the first Validate call: without a compilation cache,
// and with a warm on-disk cache. ns/op is that wall time as the parent sees
// it (exec included); load-ms and first-call-ms come from the child.
func BenchmarkColdStart(b *testing.B) {
	for _, name := range names() {
		for _, mode := range []string{"nocache", "warmcache"} {
			if mode == "warmcache" && (name == "native" || name == "goplugin") {
				continue // nothing to cache
			}
			b.Run(name+"/"+mode, func(b *testing.B) {
				prebuild(b, name)
				args := []string{"-contender", name, "-mode", "first"}
				if mode == "warmcache" {
					dir := filepath.Join(contenders.CacheDir(), "coldstart-cache-"+name)
					args = append(args, "-cache", dir)
					probe(b, args...) // fill the cache
				}
				var load, call float64
				b.ResetTimer()
				var total time.Duration
				for i := 0; i < b.N; i++ {
					res, wall := probe(b, args...)
					total += wall
					load += res["loadMS"]
					call += res["firstCallMS"]
				}
				b.StopTimer()
				n := float64(b.N)
				b.ReportMetric(load/n, "load-ms")
				b.ReportMetric(call/n, "first-call-ms")
				b.ReportMetric(float64(total.Microseconds())/1000/n, "wall-ms")
			})
		}
	}
}

// BenchmarkMemory measures RSS per ready instance in new processes: the
// difference between a process holding 17 instances and one holding 1,
// divided by 16; "used" is the same after every instance served 200
// Validate calls; "PSS" is the same in proportional set size, where a page
// that instances share copy-on-write (a memory image) counts once, not once
// per instance that read it. For go-plugin, an instance is a plugin
// process: its RSS.
// For the wasmprov guest it also reports linear memory after _initialize and
// after 1000 Validate calls.
func BenchmarkMemory(b *testing.B) {
	const n = 16
	for _, name := range names() {
		if name == "native" {
			continue
		}
		b.Run(name, func(b *testing.B) {
			prebuild(b, name)
			cache := []string{"-cache", filepath.Join(contenders.CacheDir(), "coldstart-cache-"+name)}
			var ready, used, pssReady, pssUsed, child float64
			for i := 0; i < b.N; i++ {
				one, _ := probe(b, append([]string{"-contender", name, "-mode", "memory", "-instances", "1"}, cache...)...)
				many, _ := probe(b, append([]string{"-contender", name, "-mode", "memory", "-instances", strconv.Itoa(n + 1)}, cache...)...)
				ready += (many["rssReadyMiB"] - one["rssReadyMiB"]) / n
				used += (many["rssUsedMiB"] - one["rssUsedMiB"]) / n
				pssReady += (many["pssReadyMiB"] - one["pssReadyMiB"]) / n
				pssUsed += (many["pssUsedMiB"] - one["pssUsedMiB"]) / n
				child += one["childRSSMiB"]
			}
			f := float64(b.N)
			if name == "goplugin" {
				b.ReportMetric(child/f, "MiB-RSS/instance")
			} else {
				b.ReportMetric(ready/f, "MiB-RSS/instance")
				b.ReportMetric(used/f, "MiB-RSS/used-instance")
				b.ReportMetric(pssReady/f, "MiB-PSS/instance")
				b.ReportMetric(pssUsed/f, "MiB-PSS/used-instance")
			}
			if strings.HasPrefix(name, "wasmprov") {
				lin, _ := probe(b, "-mode", "linear", "-instances", "1000")
				b.ReportMetric(lin["linearInitMiB"], "MiB-linear-init")
				b.ReportMetric(lin["linearAfterMiB"], "MiB-linear-1000calls")
			}
		})
	}
}

// BenchmarkFloor is the cost of calling a guest export that does nothing
// (wasmprov_abi_version) with wazero directly: no pool, no Call, no SDK.
// Every wasmprov call pays at least this.
func BenchmarkFloor(b *testing.B) {
	ctx := context.Background()
	path, err := contenders.Build(contenders.WasmprovGuest)
	if err != nil {
		b.Fatal(err)
	}
	for _, intr := range []bool{true, false} {
		b.Run(fmt.Sprintf("wazero-export/interruptible=%v", intr), func(b *testing.B) {
			mod, err := direct.Compile(ctx, path, intr)
			if err != nil {
				b.Fatal(err)
			}
			defer mod.Close(ctx)
			inst, err := mod.Instantiate(ctx)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := inst.CallRaw(ctx, abi.ExportABIVersion); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGuestPieces splits a wasmprov Validate into pieces, each a guest
// export of guests/probe called with wazero directly (no pool, no runtime
// bookkeeping, not interruptible), next to the same piece natively.
func BenchmarkGuestPieces(b *testing.B) {
	ctx := context.Background()
	path, err := contenders.Build(contenders.ProbeGuest)
	if err != nil {
		b.Fatal(err)
	}
	mod, err := direct.Compile(ctx, path, false)
	if err != nil {
		b.Fatal(err)
	}
	defer mod.Close(ctx)
	inst, err := mod.Instantiate(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := inst.CallExport(ctx, "probe_load_provider_spec", abi.MethodValidate, &machine.Spec); err != nil {
		b.Fatal(err)
	}
	for _, piece := range []string{"probe_nothing", "probe_input_spec", "probe_decode_spec", "probe_validate_sdk", "probe_validate_raw", "probe_provider_decode"} {
		b.Run("wasm/"+piece, func(b *testing.B) {
			lat := make([]time.Duration, 0, 1024)
			for b.Loop() {
				t := time.Now()
				rc, err := inst.CallExport(ctx, piece, abi.MethodValidate, &machine.Spec)
				if err != nil || rc != 0 {
					b.Fatal(rc, err)
				}
				lat = append(lat, time.Since(t))
			}
			reportP50(b, lat)
		})
	}
	raw := machine.Spec.ProviderSpec.Value.Raw
	natives := map[string]func() error{
		"host_encode_spec": func() error { _, err := json.Marshal(&machine.Spec); return err },
		"decode_spec": func() error {
			js, _ := json.Marshal(&machine.Spec)
			var s benchprov.MachineSpec
			return json.Unmarshal(js, &s)
		},
		"provider_decode": func() error { return benchprov.Validate(raw) },
	}
	for _, name := range []string{"host_encode_spec", "decode_spec", "provider_decode"} {
		f := natives[name]
		b.Run("native/"+name, func(b *testing.B) {
			lat := make([]time.Duration, 0, 1024)
			for b.Loop() {
				t := time.Now()
				if err := f(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			reportP50(b, lat)
		})
	}
}
