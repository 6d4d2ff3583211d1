// Command coldstart is the subprocess the cold-start and memory benchmarks
// start, so that each measurement begins in a fresh process. It prints one
// JSON line and exits. Not meant to be run by hand (the benchmarks pass the
// paths of what they built through WASMPROV_BENCH_PREBUILT). The benchmarks
// build it with their own build tags (-tags wasmtime for the wasmtime
// contender: contenders.HostTags).
//
//	coldstart -contender wasmprov -mode first [-cache DIR]
//	coldstart -contender wasmprov -mode memory -instances 16
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/bench/internal/contenders"
	"github.com/wasmprov/wasmprov/bench/internal/direct"
	"github.com/wasmprov/wasmprov/bench/internal/fixture"
)

var start = time.Now()

type result struct {
	// first mode
	LoadMS      float64 `json:"loadMS,omitempty"`
	FirstCallMS float64 `json:"firstCallMS,omitempty"`
	TotalMS     float64 `json:"totalMS,omitempty"`
	// memory mode
	Instances      int     `json:"instances,omitempty"`
	RSSBeforeMiB   float64 `json:"rssBeforeMiB,omitempty"`
	RSSReadyMiB    float64 `json:"rssReadyMiB,omitempty"`
	RSSUsedMiB     float64 `json:"rssUsedMiB,omitempty"`
	PSSReadyMiB    float64 `json:"pssReadyMiB,omitempty"`
	PSSUsedMiB     float64 `json:"pssUsedMiB,omitempty"`
	ChildRSSMiB    float64 `json:"childRSSMiB,omitempty"`
	LinearInitMiB  float64 `json:"linearInitMiB,omitempty"`
	LinearAfterMiB float64 `json:"linearAfterMiB,omitempty"`
}

func main() {
	name := flag.String("contender", "wasmprov", "contender")
	mode := flag.String("mode", "first", "first | memory | linear")
	cache := flag.String("cache", "", "compilation cache directory")
	instances := flag.Int("instances", 1, "instances (memory mode)")
	flag.Parse()
	ctx := context.Background()
	var res result
	var err error
	switch *mode {
	case "first":
		res, err = first(ctx, *name, *cache)
	case "memory":
		res, err = memory(ctx, *name, *cache, *instances)
	case "linear":
		res, err = linear(ctx, *instances)
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func first(ctx context.Context, name, cache string) (result, error) {
	spec, ok := contenders.Lookup(name)
	if !ok {
		return result{}, fmt.Errorf("unknown contender %q", name)
	}
	c, err := spec.New(ctx, contenders.Options{CacheDir: cache, Callers: 1})
	if err != nil {
		return result{}, err
	}
	loaded := time.Now()
	m := fixture.Machine("http://127.0.0.1:1")
	if err := c.Validate(ctx, &m.Spec); err != nil {
		return result{}, err
	}
	done := time.Now()
	_ = c.Close()
	return result{LoadMS: ms(loaded.Sub(start)), FirstCallMS: ms(done.Sub(loaded)), TotalMS: ms(done.Sub(start))}, nil
}

// rssMiB is a process's resident set (VmRSS). A page mapped by several
// mappings (a memory image shared copy-on-write by instances: wasmtime's,
// wasmprov's on wazero) counts once per mapping that touched it.
func rssMiB(pid string) float64 { return procKiB("/proc/"+pid+"/status", "VmRSS:") / 1024 }

// pssMiB is this process's proportional set size: every page counts once,
// split between the mappings that share it.
func pssMiB() float64 { return procKiB("/proc/self/smaps_rollup", "Pss:") / 1024 }

// procKiB reads the "<field> n kB" line of a /proc file (0 if none).
func procKiB(path, field string) float64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb
		}
	}
	return 0
}

func settle() float64 {
	goruntime.GC()
	debug.FreeOSMemory()
	return rssMiB("self")
}

// memory loads the contender with n ready instances and reports RSS before,
// when ready, and after every instance served calls.
func memory(ctx context.Context, name, cache string, n int) (result, error) {
	spec, ok := contenders.Lookup(name)
	if !ok {
		return result{}, fmt.Errorf("unknown contender %q", name)
	}
	m := fixture.Machine("http://127.0.0.1:1")
	res := result{Instances: n, RSSBeforeMiB: settle()}
	c, err := spec.New(ctx, contenders.Options{CacheDir: cache, Callers: n})
	if err != nil {
		return res, err
	}
	res.RSSReadyMiB, res.PSSReadyMiB = settle(), pssMiB()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if err := c.Validate(ctx, &m.Spec); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return res, firstErr
	}
	res.RSSUsedMiB, res.PSSUsedMiB = settle(), pssMiB()
	if sp, ok := c.(contenders.Subprocess); ok {
		res.ChildRSSMiB = rssMiB(strconv.Itoa(sp.PID()))
	}
	return res, nil
}

// linear reports a wasmprov guest instance's linear memory after
// _initialize and after n Validate calls.
func linear(ctx context.Context, n int) (result, error) {
	path, err := contenders.Build(contenders.WasmprovGuest)
	if err != nil {
		return result{}, err
	}
	mod, err := direct.Compile(ctx, path, false)
	if err != nil {
		return result{}, err
	}
	inst, err := mod.Instantiate(ctx)
	if err != nil {
		return result{}, err
	}
	res := result{Instances: 1, LinearInitMiB: float64(inst.MemoryBytes()) / (1 << 20)}
	m := fixture.Machine("http://127.0.0.1:1")
	for range n {
		st, _, err := inst.CallSpec(ctx, abi.MethodValidate, &m.Spec)
		if err != nil || st != abi.StatusOK {
			return res, fmt.Errorf("validate: %v status %v", err, st)
		}
	}
	res.LinearAfterMiB = float64(inst.MemoryBytes()) / (1 << 20)
	return res, nil
}
