package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/controller"
	"github.com/wasmprov/wasmprov/internal/testguest"
	"github.com/wasmprov/wasmprov/runtime"
	"github.com/wasmprov/wasmprov/runtime/metrics"
	"github.com/wasmprov/wasmprov/runtime/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestControllerRegistrySource checks what `wasmprov controller` hands
// package controller: registry providers that offer Cleanup and
// SetMetricsForMachines, and a /metrics that shows what a provider
// reported.
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

	src := registrySource(reg)
	if _, err := src.Get("nope"); err == nil || !strings.Contains(err.Error(), controller.ErrUnknownProvider.Error()) {
		t.Fatalf("unknown provider: %v", err)
	}
	p, err := src.Get("metered")
	if err != nil {
		t.Fatal(err)
	}
	cl, ok := p.(controller.Cleaner)
	if !ok {
		t.Fatal("a registry provider is not a controller.Cleaner")
	}
	ms, ok := p.(controller.MetricsSetter)
	if !ok {
		t.Fatal("a registry provider is not a controller.MetricsSetter")
	}
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "default"}}
	// The guest's Delete answers NOT_FOUND: nothing left, done.
	if done, err := cl.Cleanup(ctx, m, nil); err != nil || !done {
		t.Fatalf("Cleanup = %v, %v; want done", done, err)
	}
	if err := ms.SetMetricsForMachines(ctx, clusterv1alpha1.MachineList{Items: []clusterv1alpha1.Machine{*m}}); err != nil {
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
