//go:build !wasip1

// Package e2e drives both builds of the Hetzner provider — the stdlib one
// (examples/hetzner) and the hcloud-go one (examples/hetzner-hcloudgo) —
// as real wasm modules in the wasmprov runtime, through every
// cloud.Provider method, against the Hetzner API simulator on 127.0.0.1.
package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/provider"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
	"github.com/wasmprov/wasmprov/examples/hetzner/hetznertest"
	"github.com/wasmprov/wasmprov/examples/hetzner/hzprovider"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/runtime"
)

// variants are the two builds of the provider; every test runs on both.
var variants = []struct{ name, dir string }{
	{"stdlib", "examples/hetzner"},
	{"hcloudgo", "examples/hetzner-hcloudgo"},
}

// env is shared by every test of a variant: compiling a module is the
// expensive part, so each variant is loaded once per test binary.
type env struct {
	cluster  *hetznertest.Cluster
	rt       *runtime.Runtime
	wasmPath string
	raw      *runtime.Provider
	// p is raw: its Delete answers as the module did (IN_PROGRESS and
	// NOT_FOUND are errors), which the tests judge.
	p *runtime.Provider
}

var (
	envMu   sync.Mutex
	envs    = map[string]*env{}
	cluster *hetznertest.Cluster
	uidSeq  atomic.Int64
)

const (
	tokenSecret = "hetzner"
	wrongSecret = "hetzner-wrong"
	roSecret    = "hetzner-readonly"
	roToken     = "read-only-token"
)

// Policy is what a real deployment on the simulator needs: loopback
// hosts, plain HTTP, and HZ_TOKEN as the only environment fallback.
func policy() runtime.Policy {
	// Each test starts a simulator on a port of its own.
	return runtime.Policy{AllowedHosts: []string{"127.0.0.1:*"}, AllowInsecureHTTP: true, AllowedEnv: []string{"HZ_TOKEN"},
		CallTimeout: runtime.Duration(30 * time.Second)}
}

func getEnv(t testing.TB, dir string) *env {
	t.Helper()
	envMu.Lock()
	defer envMu.Unlock()
	if e, ok := envs[dir]; ok {
		return e
	}
	ctx := context.Background()
	if cluster == nil {
		cluster = hetznertest.NewCluster()
		for _, s := range [][3]string{{tokenSecret, "token", "sim-token"}, {wrongSecret, "token", "not-the-token"}, {roSecret, "token", roToken}} {
			if err := cluster.AddSecret(ctx, s[0], s[1], s[2]); err != nil {
				t.Fatal(err)
			}
		}
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() && os.Getenv("HETZNER_E2E_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	rt, err := runtime.New(testhost.EngineOption(), runtime.WithCompilationCacheDir(testguest.CompilationCacheDir(t)),
		runtime.WithKubernetesClient(cluster.Kube), runtime.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	path := testguest.Build(t, dir)
	p, err := rt.Load(ctx, path, runtime.WithPolicy(policy()))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{cluster: cluster, rt: rt, wasmPath: path, raw: p, p: p}
	envs[dir] = e
	return e
}

// fixture is one test's world: its own simulator (on its own clock), a
// provider variant and helpers to build Machines pointing at the
// simulator.
type fixture struct {
	t *testing.T
	*env
	sim   *hcloudsim.Running
	clock *simClock
	ctx   context.Context
}

// simClock is a simulator's clock (hcloudsim.Options.Now): the real time
// plus what the test skipped ahead with advance, so that a test lets the
// simulator's boot, action and deletion times pass without sleeping
// through them. It never goes back, and runs on with the real time.
type simClock struct{ skipped atomic.Int64 }

func (c *simClock) now() time.Time { return time.Now().Add(time.Duration(c.skipped.Load())) }

// advance moves the simulator's time d ahead of what it would be.
func (c *simClock) advance(d time.Duration) { c.skipped.Add(int64(d)) }

func forEach(t *testing.T, opts hcloudsim.Options, fn func(t *testing.T, f *fixture)) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			if testing.Short() && v.name != "stdlib" {
				t.Skip("-short: the hcloud-go variant (a 17 MiB module) runs in the full suite only")
			}
			e := getEnv(t, v.dir)
			if opts.BootDuration == 0 {
				opts.BootDuration = 300 * time.Millisecond
			}
			if opts.ActionDuration == 0 {
				opts.ActionDuration = 100 * time.Millisecond
			}
			clock := &simClock{}
			o := opts
			o.Now = clock.now
			sim, err := hcloudsim.Start(o, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sim.Close() })
			// The Machines are in hetznertest.Namespace, with their Secrets.
			ctx := provider.WithMachineNamespace(context.Background(), hetznertest.Namespace)
			fn(t, &fixture{t: t, env: e, sim: sim, clock: clock, ctx: ctx})
			// Every test deletes what it made: the simulator must hold no
			// server, SSH key, placement group, firewall attachment or
			// network member afterwards.
			if !t.Failed() {
				expectEmpty(t, sim)
			}
		})
	}
}

// spec returns a cloudProviderSpec for the simulator; extra entries
// override (nil deletes).
func (f *fixture) spec(extra map[string]any) map[string]any {
	s := map[string]any{
		"token":      hetznertest.TokenRef(tokenSecret, "token"),
		"serverType": "cx22",
		"location":   "fsn1",
		"endpoint":   f.sim.URL,
		"labels":     map[string]any{"cluster": "e2e"},
	}
	for k, v := range extra {
		if v == nil {
			delete(s, k)
		} else {
			s[k] = v
		}
	}
	return s
}

// machine makes a stored Machine with a fresh UID.
func (f *fixture) machine(name string, extra map[string]any) *clusterv1alpha1.Machine {
	return f.machineB(f.t, name, extra)
}

func (f *fixture) machineB(_ testing.TB, name string, extra ...map[string]any) *clusterv1alpha1.Machine {
	var x map[string]any
	if len(extra) > 0 {
		x = extra[0]
	}
	return f.newMachine(name, x)
}

func (f *fixture) newMachine(name string, extra map[string]any) *clusterv1alpha1.Machine {
	n := uidSeq.Add(1)
	name = fmt.Sprintf("%s-%d", name, n)
	m := hetznertest.Machine(name, fmt.Sprintf("uid-%d-%d", n, time.Now().UnixNano()), "ubuntu", f.spec(extra))
	return f.cluster.Machines.Add(m)
}

// fresh re-reads a Machine from the store, as the controller would before
// its next call.
func (f *fixture) fresh(m *clusterv1alpha1.Machine) *clusterv1alpha1.Machine {
	f.t.Helper()
	cur, err := f.cluster.Machines.Get(m.Namespace, m.Name)
	if err != nil {
		f.t.Fatal(err)
	}
	return cur
}

// serversOf lists the simulator's servers carrying the Machine's UID.
func (f *fixture) serversOf(m *clusterv1alpha1.Machine) []hcloudsim.ServerInfo {
	var out []hcloudsim.ServerInfo
	for _, s := range f.sim.Servers() {
		if s.Labels[hzprovider.MachineUIDLabel] == string(m.UID) {
			out = append(out, s)
		}
	}
	return out
}

func has(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// expectClass checks an error's class and the machine-controller view of it.
func expectClass(t *testing.T, err error, class runtime.Class) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected a %s error, got none", class)
	}
	if got := runtime.ErrorClass(err); got != class {
		t.Fatalf("error class = %q, want %q: %v", got, class, err)
	}
	terminal, _, _ := cloudprovidererrors.IsTerminalError(err)
	if terminal != (class == runtime.ClassTerminal) {
		t.Fatalf("IsTerminalError = %v for class %s: %v", terminal, class, err)
	}
	if cloudprovidererrors.IsNotFound(err) != (class == runtime.ClassNotFound) {
		t.Fatalf("IsNotFound = %v for class %s: %v", cloudprovidererrors.IsNotFound(err), class, err)
	}
}

func expectTerminal(t *testing.T, err error, reason clusterv1alpha1.MachineStatusError) {
	t.Helper()
	expectClass(t, err, runtime.ClassTerminal)
	if _, r, _ := cloudprovidererrors.IsTerminalError(err); r != reason {
		t.Fatalf("terminal reason = %q, want %q: %v", r, reason, err)
	}
}

// expectRetry checks a transient error that says when to retry.
func expectRetry(t *testing.T, err error, min time.Duration) {
	t.Helper()
	expectClass(t, err, runtime.ClassTransient)
	d, ok := cloudprovidererrors.RetryAfter(err)
	if !ok || d < min {
		t.Fatalf("retry hint = %v (%v), want >= %v: %v", d, ok, min, err)
	}
}
