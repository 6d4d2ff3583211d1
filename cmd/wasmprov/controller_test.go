//go:build !nokube

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/controller"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/metrics"
	"github.com/wasmprov/wasmprov/runtime/registry"
)

// TestControllerRegistrySource checks what `wasmprov controller` hands
// package controller: the registry as its ProviderSource (a missing name is
// ErrUnknownProvider), Cleanup reading the guest's NOT_FOUND as done, and
// a /metrics that shows what a provider reported from
// SetMetricsForMachines.
func TestControllerRegistrySource(t *testing.T) {
	ctx := context.Background()
	wasm, err := os.ReadFile(testguest.Build(t, "runtime/metrics/testdata/metricsguest"))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	calls := metrics.New()
	rt, err := runtime.New(engineOption(), runtime.WithLogger(logger), runtime.WithCallObserver(calls.ObserveCall),
		runtime.WithCompilationCacheDir(testguest.CompilationCacheDir(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	promReg, _ := controllerMetrics(calls, logger)
	reg := registry.New(rt, registry.WithLogger(logger))
	defer reg.Close(ctx)
	calls.SetRegistry(reg)
	if err := reg.Register(ctx, "metered", wasm, nil); err != nil {
		t.Fatal(err)
	}

	var src controller.ProviderSource = reg
	if _, err := src.Provider("nope"); err == nil || !strings.Contains(err.Error(), controller.ErrUnknownProvider.Error()) {
		t.Fatalf("unknown provider: %v", err)
	}
	p, err := src.Provider("metered")
	if err != nil {
		t.Fatal(err)
	}
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "default"}}
	// The guest's Delete answers NOT_FOUND: nothing left, done.
	if done, err := p.Cleanup(ctx, m, nil); err != nil || !done {
		t.Fatalf("Cleanup = %v, %v; want done", done, err)
	}
	if err := p.SetMetricsForMachines(ctx, clusterv1alpha1.MachineList{Items: []clusterv1alpha1.Machine{*m}}, nil); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(promhttp.HandlerFor(promReg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		"wasmprov_guest_metered_machines 1\n",
		`wasmprov_guest_metered_machine_up{machine="m1"} 1`,
		`wasmprov_provider_calls_total{method="Delete",provider="metered"} 1`,
		`wasmprov_provider_calls_total{method="SetMetricsForMachines",provider="metered"} 1`,
	} {
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("/metrics (%d) lacks %q", resp.StatusCode, want)
		}
	}
}

// TestControllerMetricsGather: what /metrics serves gathers without an
// error (a family registered twice makes every scrape a 500), with the Go
// and process metrics once and the controllers' own families.
func TestControllerMetricsGather(t *testing.T) {
	promReg, regEvents := controllerMetrics(metrics.New(), slog.New(slog.DiscardHandler))
	regEvents.WithLabelValues("p", "loaded").Inc()
	families, err := controllerGatherer(promReg).Gather()
	if err != nil {
		t.Fatalf("gathering /metrics: %v", err)
	}
	seen := map[string]bool{}
	for _, f := range families {
		seen[f.GetName()] = true
	}
	for _, want := range []string{"go_goroutines", "process_cpu_seconds_total", "wasmprov_registry_events_total"} {
		if !seen[want] {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestControllerFlags: -providers is required unless -wasmproviders; the
// WasmProvider flags' defaults and checks.
func TestControllerFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, f *controllerFlags)
	}{
		{name: "no source", args: nil, wantErr: "-providers DIR is required (or -wasmproviders)"},
		{name: "directory only", args: []string{"-providers", "/p"}, check: func(t *testing.T, f *controllerFlags) {
			if f.wasmProviders.enabled || *f.providersDir != "/p" {
				t.Fatalf("wasmproviders %v, providers %q", f.wasmProviders.enabled, *f.providersDir)
			}
		}},
		{name: "wasmproviders only", args: []string{"-wasmproviders"}, check: func(t *testing.T, f *controllerFlags) {
			if !f.wasmProviders.enabled || *f.providersDir != "" || f.wasmProviders.poll != time.Minute {
				t.Fatalf("wasmproviders %v, providers %q, poll %v", f.wasmProviders.enabled, *f.providersDir, f.wasmProviders.poll)
			}
		}},
		{name: "both", args: []string{"-providers", "/p", "-wasmproviders", "-wasmprovider-poll-interval", "10s", "-plain-http"},
			check: func(t *testing.T, f *controllerFlags) {
				if !f.wasmProviders.enabled || *f.providersDir != "/p" || f.wasmProviders.poll != 10*time.Second || !f.images.oci.plainHTTP {
					t.Fatalf("wasmproviders %v, providers %q, poll %v, plain-http %v", f.wasmProviders.enabled, *f.providersDir,
						f.wasmProviders.poll, f.images.oci.plainHTTP)
				}
			}},
		{name: "zero poll", args: []string{"-wasmproviders", "-wasmprovider-poll-interval", "0s"}, wantErr: "-wasmprovider-poll-interval must be positive"},
		{name: "zero poll unused", args: []string{"-providers", "/p", "-wasmprovider-poll-interval", "0s"}},
		{name: "bad log level", args: []string{"-wasmproviders", "-log-level", "loud"}, wantErr: "-log-level"},
		{name: "stray argument", args: []string{"-wasmproviders", "extra"}, wantErr: "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := stderr
			stderr = io.Discard
			defer func() { stderr = old }()
			f, err := parseControllerFlags(tc.args)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case tc.check != nil:
				tc.check(t, f)
			}
		})
	}
}

// TestReadyzWaitsForWasmProviders: /readyz answers 200 before a
// readiness function is set (no -wasmproviders), 503 while the one set
// says not ready, and 200 once it does.
func TestReadyzWaitsForWasmProviders(t *testing.T) {
	var ready readiness
	mux := metricsMux(prometheus.NewRegistry(), &ready)
	status := func(path string) int {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code
	}
	if c := status("/readyz"); c != http.StatusOK {
		t.Fatalf("/readyz without a readiness function: %d", c)
	}
	var synced atomic.Bool
	ready.set(synced.Load)
	if c := status("/readyz"); c != http.StatusServiceUnavailable {
		t.Fatalf("/readyz before the reconciler synced: %d", c)
	}
	if c := status("/healthz"); c != http.StatusOK {
		t.Fatalf("/healthz before the reconciler synced: %d", c)
	}
	synced.Store(true)
	if c := status("/readyz"); c != http.StatusOK {
		t.Fatalf("/readyz once synced: %d", c)
	}
}

// TestOCIClientsPerPullSecret: a pull Secret's credentials reach the
// registry; the controller's own (none here) do not; a credsStore or
// credHelpers in a Secret is not run; clients are cached per config and
// share the store.
func TestOCIClientsPerPullSecret(t *testing.T) {
	ctx := context.Background()
	reg := testregistry.Start(t, testregistry.Options{User: "bob", Password: "pw", TLS: true})
	dir := t.TempDir()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	images := addImageFlags(fs)
	if err := fs.Parse([]string{"-ca-file", reg.CAFile, "-store", filepath.Join(dir, "store"),
		"-docker-config", filepath.Join(dir, "none.json")}); err != nil {
		t.Fatal(err)
	}
	clients, err := newOCIClients(images, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte("bob:pw"))
	secret := []byte(`{"auths":{"` + reg.Host + `":{"auth":"` + auth + `"}}}`)
	withHelpers := []byte(`{"credsStore":"wasmprov-test-no-such-helper","credHelpers":{"` + reg.Host +
		`":"wasmprov-test-no-such-helper"},"auths":{"` + reg.Host + `":{"auth":"` + auth + `"},"other.example:5000":{"auth":"` + auth + `"}}}`)

	authed, err := clients.New(secret)
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.Host + "/providers/fake:1"
	d, err := authed.Push(ctx, wasm, ref)
	if err != nil {
		t.Fatalf("push with the Secret's credentials: %v", err)
	}
	if again, err := clients.New(secret); err != nil || again != authed {
		t.Fatalf("same Secret: a new client (%v)", err)
	}
	own, err := clients.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if own == authed {
		t.Fatal("no Secret got the Secret's client")
	}
	// One Store value: its pins are in memory, and every client's GC must
	// see them.
	if own.Store() == nil || own.Store() != authed.Store() {
		t.Fatalf("stores %p and %p, want one shared", own.Store(), authed.Store())
	}
	if _, err := own.Resolve(ctx, ref); err == nil {
		t.Fatal("resolved without credentials: the Secret's leaked into the controller's client")
	}
	helped, err := clients.New(withHelpers)
	if err != nil {
		t.Fatal(err)
	}
	if helped == authed {
		t.Fatal("another config got the cached client of the first")
	}
	if got, err := helped.Resolve(ctx, ref); err != nil || got != d {
		t.Fatalf("Secret with credential helpers: %v, %v; want its auths used, the helpers ignored", got, err)
	}
	// The Secret's client stored what it pulled: the controller's client
	// serves the digest from the shared store without credentials.
	pinned := reg.Host + "/providers/fake@" + d.String()
	if _, err := authed.Pull(ctx, pinned); err != nil {
		t.Fatal(err)
	}
	before := reg.Requests()
	a, err := own.Pull(ctx, pinned)
	if err != nil {
		t.Fatalf("pull by digest from the shared store: %v", err)
	}
	if !bytes.Equal(a.Wasm, wasm) || reg.Requests() != before {
		t.Fatalf("shared store: same bytes %v, %d requests", bytes.Equal(a.Wasm, wasm), reg.Requests()-before)
	}
	for _, bad := range []string{`not json`, `{"auths":"x"}`} {
		if _, err := clients.New([]byte(bad)); err == nil {
			t.Errorf("docker config %s accepted", bad)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "wasmprov-pull-secret-*")); len(left) != 0 {
		t.Errorf("pull secret files left behind: %v", left)
	}
}
