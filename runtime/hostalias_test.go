package runtime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/provider"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testlog"
	"github.com/wasmprov/wasmprov/runtime"
)

// An unmodified Machine naming the real API's https URL runs against a
// loopback simulator through the policy's hostAliases; the alias is in the
// load log.
func TestHostAliasesSendAnUnmodifiedProviderToASimulator(t *testing.T) {
	ctx := context.Background()
	c := newFakeCloud(t, "s3cret")
	kube := newKubeFixture(t)
	logger, logs := testlog.NewText()
	rt := newRuntime(t, runtime.WithKubernetesClient(kube.client), runtime.WithLogger(logger))
	policy, err := runtime.ParsePolicy([]byte("allowedHosts: [api.hostcalls.example]\nhostAliases:\n  api.hostcalls.example: " + c.srv.URL + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := rt.Load(ctx, testguest.Build(t, "examples/hostcalls"), runtime.WithPolicy(policy))
	if err != nil {
		t.Fatal(err)
	}
	m := newMachine("worker-1", "u-1", hostcallsSpec("https://api.hostcalls.example", secretToken))
	if err := p.Validate(provider.WithMachineNamespace(ctx, m.Namespace), m.Spec, nil); err != nil {
		t.Fatalf("Validate through the alias: %v", err)
	}
	c.mu.Lock()
	requests := strings.Join(c.requests, ",")
	c.mu.Unlock()
	if requests != "GET /v1/ping" {
		t.Errorf("the simulator saw %q, want the guest's ping", requests)
	}
	if want := "api.hostcalls.example → " + c.srv.URL; !strings.Contains(logs.String(), want) {
		t.Errorf("the load log does not show the alias %q:\n%s", want, logs.String())
	}

	// An alias elsewhere than loopback is refused at load.
	_, err = rt.Load(ctx, testguest.Build(t, "examples/hostcalls"),
		runtime.WithPolicy(runtime.Policy{AllowedHosts: []string{"api.hostcalls.example"}, HostAliases: map[string]string{"api.hostcalls.example": "http://10.1.2.3:80"}}))
	if err == nil || !strings.Contains(err.Error(), "invalid policy: hostAliases: api.hostcalls.example") || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("a non-loopback alias: %v", err)
	}
}
