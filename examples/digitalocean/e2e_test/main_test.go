//go:build !wasip1

// Package e2e drives the DigitalOcean provider (examples/digitalocean, on
// godo) as a real wasm module in the wasmprov runtime, against the
// simulator (dosim) on 127.0.0.1. The provider calls
// https://api.digitalocean.com unmodified; the policy's hostAliases send
// those requests to the simulator.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/examples/digitalocean/dosim"
	"github.com/wasmprov/wasmprov/internal/testing/kubefake"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testhost"
	"github.com/wasmprov/wasmprov/provider"
	"github.com/wasmprov/wasmprov/runtime"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

const (
	guestDir  = "examples/digitalocean"
	apiHost   = "api.digitalocean.com"
	namespace = "kube-system"
	// simToken is dosim's default token, which testdata/secret.yaml holds.
	simToken = "sim-token"
	// tokenSecret holds simToken, wrongSecret a token the API refuses.
	tokenSecret = "digitalocean"
	wrongSecret = "digitalocean-wrong"
)

// kube holds the tests' token Secrets and testdata/secret.yaml.
func kube() *kubefake.Clientset {
	secret := func(name, token string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Data: map[string][]byte{"token": []byte(token)}}
	}
	var manifest corev1.Secret
	if err := yaml.UnmarshalStrict(readTestdata("secret.yaml"), &manifest); err != nil {
		panic(err)
	}
	// What the API server does with stringData.
	for k, v := range manifest.StringData {
		if manifest.Data == nil {
			manifest.Data = map[string][]byte{}
		}
		manifest.Data[k] = []byte(v)
	}
	return kubefake.New(secret(tokenSecret, simToken), secret(wrongSecret, "not-the-token"), &manifest)
}

func readTestdata(name string) []byte {
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		panic(err)
	}
	return b
}

// policy is what production on the real API needs (testdata/policy.yaml),
// with the API's host sent to target, a loopback URL ("": none).
func policy(target string) runtime.Policy {
	p, err := runtime.ParsePolicy(readTestdata("policy.yaml"))
	if err != nil {
		panic(err)
	}
	if target != "" {
		p.HostAliases = map[string]string{apiHost: target}
	}
	p.CallTimeout = runtime.Duration(30 * time.Second)
	return p
}

// front is the one loopback server the shared provider's alias points
// at; each test plugs its own simulator in (tests run one at a time).
type front struct{ sim atomic.Pointer[dosim.Sim] }

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := f.sim.Load()
	if s == nil {
		http.Error(w, "no simulator plugged in", http.StatusServiceUnavailable)
		return
	}
	s.ServeHTTP(w, r)
}

var (
	envMu  sync.Mutex
	shared *env
)

// env is shared by every test: loading the module is the costly part.
type env struct {
	rt    *runtime.Runtime
	wasm  string
	p     *runtime.Provider
	front *front
	srv   *httptest.Server
}

func logger() *slog.Logger {
	if testing.Verbose() && os.Getenv("DIGITALOCEAN_E2E_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func getEnv(t testing.TB) *env {
	t.Helper()
	envMu.Lock()
	defer envMu.Unlock()
	if shared != nil {
		return shared
	}
	rt, err := runtime.New(testhost.EngineOption(), runtime.WithCompilationCacheDir(testguest.CompilationCacheDir(t)),
		runtime.WithKubernetesClient(kube()), runtime.WithLogger(logger()))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{rt: rt, wasm: testguest.Build(t, guestDir), front: &front{}}
	e.srv = httptest.NewServer(e.front)
	if e.p, err = rt.Load(context.Background(), e.wasm, runtime.WithPolicy(policy(e.srv.URL))); err != nil {
		t.Fatal(err)
	}
	shared = e
	return e
}

// fixture is one test's world: its own simulator behind the shared
// provider's alias, and a store of its Machines.
type fixture struct {
	t *testing.T
	*env
	sim *dosim.Sim
	ctx context.Context
	machines
}

var uidSeq atomic.Int64

func newFixture(t *testing.T, opts dosim.Options) *fixture {
	e := getEnv(t)
	opts.Token = simToken
	sim := dosim.New(opts)
	e.front.sim.Store(sim)
	t.Cleanup(func() {
		e.front.sim.Store(nil)
		// Every test deletes what it made.
		if !t.Failed() {
			expectEmpty(t, sim)
		}
	})
	ctx := provider.WithMachineNamespace(context.Background(), namespace)
	return &fixture{t: t, env: e, sim: sim, ctx: ctx, machines: machines{m: map[string]*clusterv1alpha1.Machine{}}}
}

func expectEmpty(t *testing.T, sim *dosim.Sim) {
	t.Helper()
	if d := sim.Droplets(); len(d) != 0 {
		t.Errorf("the simulator holds droplets: %+v", d)
	}
	if k := sim.SSHKeys(); len(k) != 0 {
		t.Errorf("the simulator holds ssh keys: %+v", k)
	}
}

// cloudProviderSpec is upstream's example's (examples/digitalocean-
// machinedeployment.yaml) with an available size; extra overrides (nil
// deletes).
func cloudProviderSpec(extra map[string]any) map[string]any {
	s := map[string]any{
		"token":  map[string]any{"secretKeyRef": map[string]any{"namespace": namespace, "name": tokenSecret, "key": "token"}},
		"region": "fra1", "size": "s-1vcpu-2gb", "backups": false, "ipv6": false,
		"private_networking": true, "monitoring": false, "tags": []any{"machine-controller"},
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

// providerSpec is a providerSpec.value around cps; extra overrides its
// other fields (nil deletes).
func providerSpec(cps map[string]any, extra map[string]any) []byte {
	v := map[string]any{
		"sshPublicKeys":       []any{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE2e e2e@wasmprov"},
		"cloudProvider":       "digitalocean",
		"cloudProviderSpec":   cps,
		"operatingSystem":     "ubuntu",
		"operatingSystemSpec": map[string]any{"disableAutoUpdate": true},
	}
	for k, x := range extra {
		if x == nil {
			delete(v, k)
		} else {
			v[k] = x
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// machine makes a stored Machine with a fresh UID.
func (f *fixture) machine(name string, cps map[string]any) *clusterv1alpha1.Machine {
	return f.machineWith(name, providerSpec(cloudProviderSpec(cps), nil))
}

func (f *fixture) machineWith(name string, value []byte) *clusterv1alpha1.Machine {
	n := uidSeq.Add(1)
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, n), Namespace: namespace,
		UID: types.UID(newUID(n))}}
	m.Spec.Name = m.Name
	m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: value}
	return f.add(m)
}

func newUID(n int64) string {
	return fmt.Sprintf("0e2e%04x-%04x-4000-8000-%012x", n, time.Now().UnixNano()&0xffff, time.Now().UnixNano()&0xffffffffffff)
}

// machines is a Machine store: the updater the provider's machine_update
// goes through persists here, and a test re-reads a Machine as the
// controller would before its next call.
type machines struct {
	mu sync.Mutex
	m  map[string]*clusterv1alpha1.Machine
}

func (s *machines) add(m *clusterv1alpha1.Machine) *clusterv1alpha1.Machine {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[m.Name] = m.DeepCopy()
	return m
}

// fresh is the Machine as stored.
func (s *machines) fresh(m *clusterv1alpha1.Machine) *clusterv1alpha1.Machine {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[m.Name].DeepCopy()
}

func (s *machines) data() *provider.Data {
	return &provider.Data{Update: func(m *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		cur, ok := s.m[m.Name]
		if !ok {
			return nil, fmt.Errorf("machine %s is not stored", m.Name)
		}
		next := cur.DeepCopy()
		modify(next)
		s.m[m.Name] = next
		return next.DeepCopy(), nil
	}}
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
	if terminal, _, _ := cloudprovidererrors.IsTerminalError(err); terminal != (class == runtime.ClassTerminal) {
		t.Fatalf("IsTerminalError = %v for class %s: %v", terminal, class, err)
	}
}

func expectInvalidConfiguration(t *testing.T, err error) {
	t.Helper()
	expectClass(t, err, runtime.ClassTerminal)
	if _, r, _ := cloudprovidererrors.IsTerminalError(err); r != clusterv1alpha1.InvalidConfigurationMachineError {
		t.Fatalf("terminal reason = %q, want InvalidConfiguration: %v", r, err)
	}
}

// expectRetry checks a transient error that says when to retry.
func expectRetry(t *testing.T, err error, least, most time.Duration) {
	t.Helper()
	expectClass(t, err, runtime.ClassTransient)
	d, ok := cloudprovidererrors.RetryAfter(err)
	if !ok || d < least || d > most {
		t.Fatalf("retry hint = %v (%v), want in [%v, %v]: %v", d, ok, least, most, err)
	}
}
