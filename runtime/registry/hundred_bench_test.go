package registry_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/metadata"
	"github.com/wasmprov/wasmprov/runtime/registry"
)

// hundredChildEnv carries a hundredRun (JSON) to the child process
// BenchmarkHundredProviders starts; TestMain runs the child instead of the
// tests when it is set.
const hundredChildEnv = "WASMPROV_HUNDRED_PROVIDERS_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(hundredChildEnv); spec != "" {
		os.Exit(hundredChild(spec))
	}
	os.Exit(m.Run())
}

// BenchmarkHundredProviders loads n distinct provider modules into one
// registry (LoadDir, with the default smoke call) from a warm compilation
// cache, lazily (Policy.IdleTimeout, no Prewarm), and measures, per run:
//
//   - s-load: LoadDir of all n, warm cache;
//   - MiB-RSS-idle: the process's VmRSS once every instance has been
//     reaped (after a GC returning freed memory to the OS), and
//     MiB-RSS-base the same before anything was loaded (the host's own
//     cost), MiB-RSS-idle/provider their difference over n;
//   - ms-first-call-p50 and -max: a call (the smoke call: AddDefaults of an
//     empty spec) to each provider holding no instance, which starts one;
//   - MiB-RSS-1inst/provider: what the first calls added (each provider
//     then holds one idle instance), over n; MiB-goheap-1inst/provider the
//     part of it in the host's Go heap (wazero's per-instance structures),
//     the rest being mostly the instance's linear memory (mmap'd, runtime/
//     internal/mmapmem: only touched pages count).
//
// Each run is a new process (this test binary started again, see TestMain):
// RSS and the Go heap of one n must not carry over into the next, and the
// Go runtime does not give memory back promptly enough to measure n=1 after
// n=100 in one process. A first untimed run warms the cache (instrumented
// modules and compiled code).
//
// The modules: examples/fake annotated with n names (metadata.Write: the
// code is identical, only the wasmprov.metadata section differs, so they
// share one compilation); for "mixed" 97 of them and three real ones
// (examples/hostcalls, examples/hetzner and the C fake, which needs clang:
// make c-guests); for "hetzner" the Hetzner guest with 10 names.
//
//	WASMPROV_TEST_CACHE=/tmp/wasmprov-cache go test -run '^$' \
//	  -bench BenchmarkHundredProviders -benchtime 1x ./runtime/registry/
func BenchmarkHundredProviders(b *testing.B) {
	work := b.TempDir()
	fakes := annotatedCopies(b, work, "examples/fake", "fake", 100)
	for _, c := range []struct {
		name string
		n    int
		mods func(b *testing.B) []string
	}{
		{"fake/n=1", 1, func(*testing.B) []string { return fakes[:1] }},
		{"fake/n=10", 10, func(*testing.B) []string { return fakes[:10] }},
		{"fake/n=100", 100, func(*testing.B) []string { return fakes }},
		{"mixed/n=100", 100, func(b *testing.B) []string { return append(slices.Clip(fakes[:97]), realGuests(b, work)...) }},
		// A large real guest (11.5 MB, 100,000 data segments): what one
		// instance of it costs, and its first call.
		{"hetzner/n=10", 10, func(b *testing.B) []string { return annotatedCopies(b, work, "examples/hetzner", "hetzner", 10) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			dir := filepath.Join(work, strings.NewReplacer("/", "-", "=", "").Replace(c.name))
			if err := os.Mkdir(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			mods := c.mods(b)
			for _, m := range mods {
				if err := os.Link(m, filepath.Join(dir, filepath.Base(m))); err != nil {
					b.Fatal(err)
				}
			}
			// The idle timeout outlasts the n first calls, so that every
			// instance they start is still there when the RSS is read.
			run := hundredRun{Dir: dir, Cache: testguest.CompilationCacheDir(b), IdleTimeout: 3 * time.Second}
			runHundredChild(b, run) // warms the cache
			var sum hundredResult
			for b.Loop() {
				r := runHundredChild(b, run)
				sum.LoadSeconds += r.LoadSeconds
				sum.RSSBaseMiB += r.RSSBaseMiB
				sum.RSSIdleMiB += r.RSSIdleMiB
				sum.RSSOneEachMiB += r.RSSOneEachMiB
				sum.FirstCallP50ms += r.FirstCallP50ms
				if r.FirstCallMaxms > sum.FirstCallMaxms {
					sum.FirstCallMaxms, sum.FirstCallSlowest = r.FirstCallMaxms, r.FirstCallSlowest
				}
				sum.HeapIdleMiB += r.HeapIdleMiB
				sum.HeapOneEachMiB += r.HeapOneEachMiB
			}
			f, n := float64(b.N), float64(c.n)
			b.ReportMetric(sum.LoadSeconds/f, "s-load")
			b.ReportMetric(sum.RSSBaseMiB/f, "MiB-RSS-base")
			b.ReportMetric(sum.RSSIdleMiB/f, "MiB-RSS-idle")
			b.ReportMetric((sum.RSSIdleMiB-sum.RSSBaseMiB)/f/n, "MiB-RSS-idle/provider")
			b.ReportMetric(sum.HeapIdleMiB/f, "MiB-goheap-idle")
			b.ReportMetric((sum.RSSOneEachMiB-sum.RSSIdleMiB)/f/n, "MiB-RSS-1inst/provider")
			b.ReportMetric((sum.HeapOneEachMiB-sum.HeapIdleMiB)/f/n, "MiB-goheap-1inst/provider")
			b.ReportMetric(sum.FirstCallP50ms/f, "ms-first-call-p50")
			b.ReportMetric(sum.FirstCallMaxms, "ms-first-call-max")
			b.Logf("slowest first call: %s, %.1f ms", sum.FirstCallSlowest, sum.FirstCallMaxms)
		})
	}
}

// annotatedCopies writes n copies of the Go guest in guestDir into dir,
// each annotated with a name of its own (prefix-000, ...), and returns
// their paths: the runs link them into their directories.
func annotatedCopies(b *testing.B, dir, guestDir, prefix string, n int) []string {
	b.Helper()
	wasm, err := os.ReadFile(testguest.Build(b, guestDir))
	if err != nil {
		b.Fatal(err)
	}
	paths := make([]string, n)
	for i := range paths {
		name := fmt.Sprintf("%s-%03d", prefix, i)
		annotated, err := metadata.Write(wasm, &metadata.Metadata{Name: name, Version: "0.1.0"})
		if err != nil {
			b.Fatal(err)
		}
		paths[i] = filepath.Join(dir, name+".wasm")
		if err := os.WriteFile(paths[i], annotated, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return paths
}

// realGuests builds the real guests of the mixed run into dir.
func realGuests(b *testing.B, dir string) []string {
	b.Helper()
	var out []string
	for _, g := range []string{"examples/hostcalls", "examples/hetzner"} {
		out = append(out, testguest.Build(b, g))
	}
	c := filepath.Join(dir, "c-fake.wasm")
	if _, err := os.Stat(c); err != nil {
		cmd := exec.Command(filepath.Join(testguest.Root(), "examples", "c-fake", "build.sh"), c)
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("building the C guest (needs clang: make c-guests): %v\n%s", err, o)
		}
	}
	return append(out, c)
}

// hundredRun is what the child process does.
type hundredRun struct {
	Dir         string
	Cache       string
	IdleTimeout time.Duration
}

// hundredResult is what it measured.
type hundredResult struct {
	Providers      int
	LoadSeconds    float64
	RSSBaseMiB     float64
	RSSIdleMiB     float64
	RSSOneEachMiB  float64
	HeapIdleMiB    float64
	HeapOneEachMiB float64
	FirstCallP50ms float64
	FirstCallMaxms float64
	// FirstCallSlowest names the provider whose first call took longest.
	FirstCallSlowest string
	Error            string
}

const hundredResultPrefix = "hundred-result: "

// hundredHeapProfileEnv names a file the child writes a heap profile of
// the idle registry to (go tool pprof -sample_index=inuse_space), and one
// with an instance per provider to the same name with ".1inst" appended.
const hundredHeapProfileEnv = "WASMPROV_HUNDRED_HEAP_PROFILE"

// hundredCPUProfileEnv names a file the child writes a CPU profile of
// LoadDir to.
const hundredCPUProfileEnv = "WASMPROV_HUNDRED_CPU_PROFILE"

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func runHundredChild(b *testing.B, run hundredRun) hundredResult {
	b.Helper()
	spec, err := json.Marshal(run)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), hundredChildEnv+"="+string(spec))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("child: %v\n%s%s", err, out, stderr.Bytes())
	}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, hundredResultPrefix); ok {
			var r hundredResult
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				b.Fatal(err)
			}
			if r.Error != "" {
				b.Fatalf("child: %s\n%s", r.Error, stderr.Bytes())
			}
			return r
		}
	}
	b.Fatalf("child printed no result:\n%s%s", out, stderr.Bytes())
	return hundredResult{}
}

// hundredChild runs one measurement in this (new) process and prints it.
func hundredChild(spec string) int {
	var run hundredRun
	r, err := func() (hundredResult, error) {
		if err := json.Unmarshal([]byte(spec), &run); err != nil {
			return hundredResult{}, err
		}
		return measureHundred(run)
	}()
	if err != nil {
		r.Error = err.Error()
	}
	j, _ := json.Marshal(r)
	fmt.Println(hundredResultPrefix + string(j))
	return 0
}

func measureHundred(run hundredRun) (hundredResult, error) {
	var res hundredResult
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	rt, err := runtime.New(testhost.EngineOption(), runtime.WithCompilationCacheDir(run.Cache), runtime.WithLogger(quiet),
		runtime.WithDefaultPolicy(runtime.Policy{IdleTimeout: runtime.Duration(run.IdleTimeout)}))
	if err != nil {
		return res, err
	}
	defer rt.Close(ctx)
	reg := registry.New(rt, registry.WithLogger(quiet))
	defer reg.Close(ctx)
	if res.RSSBaseMiB, err = settledRSS(); err != nil {
		return res, err
	}
	if path := os.Getenv(hundredCPUProfileEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return res, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return res, err
		}
	}
	start := time.Now()
	err = reg.LoadDir(ctx, run.Dir)
	res.LoadSeconds = time.Since(start).Seconds()
	pprof.StopCPUProfile() // a no-op when not profiling
	if err != nil {
		return res, err
	}
	names := reg.Names()
	res.Providers = len(names)
	var handles []*registry.Handle
	for _, name := range names {
		h, err := reg.Get(name)
		if err != nil {
			return res, err
		}
		handles = append(handles, h)
	}
	// Idle: the smoke calls' instances reaped.
	if err := waitReaped(handles, 10*time.Second+10*run.IdleTimeout); err != nil {
		return res, err
	}
	if res.RSSIdleMiB, err = settledRSS(); err != nil {
		return res, err
	}
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	res.HeapIdleMiB = float64(ms.HeapInuse) / (1 << 20)
	if path := os.Getenv(hundredHeapProfileEnv); path != "" {
		if err := writeHeapProfile(path); err != nil {
			return res, err
		}
	}
	// First calls: each provider holds no instance, the call starts one.
	// The instances are then idle for less than the timeout (the calls
	// take far less): the RSS read next holds one instance per provider.
	lat := make([]float64, 0, len(handles))
	for _, h := range handles {
		t := time.Now()
		if err := registry.DefaultSmokeTest(ctx, h); err != nil {
			return res, fmt.Errorf("%s: %w", h.Name(), err)
		}
		ms := float64(time.Since(t).Microseconds()) / 1000
		if len(lat) == 0 || ms > slices.Max(lat) {
			res.FirstCallSlowest = h.Name()
		}
		lat = append(lat, ms)
		if live := h.Current().PoolStats().Live; live != 1 {
			return res, fmt.Errorf("%s: %d live instances after its first call, want 1", h.Name(), live)
		}
	}
	if res.RSSOneEachMiB, err = settledRSS(); err != nil {
		return res, err
	}
	goruntime.ReadMemStats(&ms)
	res.HeapOneEachMiB = float64(ms.HeapInuse) / (1 << 20)
	if path := os.Getenv(hundredHeapProfileEnv); path != "" {
		if err := writeHeapProfile(path + ".1inst"); err != nil {
			return res, err
		}
	}
	for _, h := range handles {
		if live := h.Current().PoolStats().Live; live != 1 {
			return res, fmt.Errorf("%s: reaped before the RSS was read (%d live): the first calls took longer than the idle timeout", h.Name(), live)
		}
	}
	slices.Sort(lat)
	res.FirstCallP50ms, res.FirstCallMaxms = lat[len(lat)/2], lat[len(lat)-1]
	return res, nil
}

func waitReaped(handles []*registry.Handle, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, h := range handles {
		for h.Current().PoolStats().Live != 0 {
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: instances not reaped: %+v", h.Name(), h.Current().PoolStats())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// settledRSS is VmRSS after a GC that returns freed memory to the OS.
func settledRSS() (float64, error) {
	goruntime.GC()
	debug.FreeOSMemory()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/self/status")
}
