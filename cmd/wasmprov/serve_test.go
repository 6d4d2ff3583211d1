package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testlog"
	"github.com/wasmprov/wasmprov/internal/testing/wait"
)

// TestServe runs `wasmprov serve` end to end: JSON logs, readiness, a call
// through the JSON API, metrics, and a hot reload of a file dropped in.
func TestServe(t *testing.T) {
	fake, err := os.ReadFile(testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	metered, err := os.ReadFile(testguest.Build(t, "runtime/metrics/testdata/metricsguest"))
	if err != nil {
		t.Fatal(err)
	}
	refused, err := os.ReadFile(testguest.BuildWith(t, "runtime/metrics/testdata/metricsguest", "-X main.Mode=refused"))
	if err != nil {
		t.Fatal(err)
	}
	hetzner, err := os.ReadFile(testguest.Build(t, "examples/hetzner"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "fake.wasm"), fake, 0o644)
	os.WriteFile(filepath.Join(dir, "hetzner.wasm"), hetzner, 0o644)
	os.WriteFile(filepath.Join(dir, "metered.wasm"), metered, 0o644)
	os.WriteFile(filepath.Join(dir, "refused.wasm"), refused, 0o644)
	os.WriteFile(filepath.Join(dir, "broken.wasm"), []byte("not wasm"), 0o644)

	logs := &testlog.Buffer{}
	serveLogOutput = logs
	defer func() { serveLogOutput = os.Stderr }()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--dir", dir, "--addr", "127.0.0.1:0", "--log-format", "json",
			"--cache", testguest.CompilationCacheDir(t), "--debounce", "20ms"})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()

	// The address and readiness come from the log, JSON line by line.
	base := serveAddress(t, logs)
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
	}
	if !strings.Contains(logs.String(), "provider version rejected") || !strings.Contains(logs.String(), "broken") {
		t.Errorf("no log line for the broken module:\n%s", logs.String())
	}

	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	post := func(path, body string) (int, map[string]any) {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, out
	}

	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	// The broken module is configured and serves nothing: not ready, and
	// it is named; the others serve all the same.
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, `"ready": false`) ||
		!strings.Contains(body, `"notServing": [`+"\n"+`    "broken"`) || !strings.Contains(body, `"name": "fake"`) {
		t.Fatalf("/readyz: %d %s", code, body)
	}

	machine := `{"machine": {"metadata": {"name": "m1", "uid": "u1"}, "spec": {"providerSpec": {"value": {"cloudProvider": "fake", "cloudProviderSpec": {"passValidation": true}}}}}}`
	code, out := post("/v1/providers/fake/Validate", machine)
	if code != 200 || out["error"] != nil {
		t.Fatalf("Validate: %d %v", code, out)
	}
	code, out = post("/v1/providers/fake/Get", machine)
	if res, _ := out["result"].(map[string]any); code != 200 || res["providerID"] != "fake://u1" {
		t.Fatalf("Get: %d %v", code, out)
	}
	failing := strings.Replace(machine, `"passValidation": true`, `"passValidation": false`, 1)
	if code, out = post("/v1/providers/fake/Validate", failing); code != 422 || out["class"] != "transient" {
		t.Fatalf("failing Validate: %d %v", code, out)
	}
	if code, _ = post("/v1/providers/nope/Validate", machine); code != 404 {
		t.Fatalf("unknown provider: %d", code)
	}
	if code, out = post("/v1/providers/broken/Validate", machine); code != 503 || !strings.Contains(fmt.Sprint(out["error"]), "not a valid WebAssembly module") {
		t.Fatalf("configured provider that failed to load: %d %v", code, out)
	}
	if code, _ = post("/v1/providers/fake/Teleport", machine); code != 400 {
		t.Fatalf("unknown method: %d", code)
	}

	// serve has no Machines: its guest metrics are what a provider reported
	// to the last SetMetricsForMachines through the API.
	machines := `{"machines": {"items": [{"metadata": {"name": "m1"}}, {"metadata": {"name": "m2"}}]}}`
	code, out = post("/v1/providers/metered/SetMetricsForMachines", machines)
	if res, _ := out["result"].(map[string]any); code != 200 || res["prefix"] != "wasmprov_guest_metered_" || len(res["metrics"].([]any)) != 3 {
		t.Fatalf("SetMetricsForMachines: %d %v", code, out)
	}
	// The Hetzner guest counts Machines by server type and location.
	hz := func(name, serverType string) string {
		return `{"metadata": {"name": "` + name + `"}, "spec": {"providerSpec": {"value": {"cloudProvider": "hetzner", ` +
			`"cloudProviderSpec": {"serverType": "` + serverType + `", "location": "fsn1"}}}}}`
	}
	hzMachines := `{"machines": {"items": [` + hz("a", "cx22") + `, ` + hz("b", "cx22") + `, ` + hz("c", "cx32") + `]}}`
	if code, out = post("/v1/providers/hetzner/SetMetricsForMachines", hzMachines); code != 200 {
		t.Fatalf("hetzner SetMetricsForMachines: %d %v", code, out)
	}
	if code, out = post("/v1/providers/refused/SetMetricsForMachines", machines); code != 422 || out["class"] != "bad-result" {
		t.Fatalf("refused SetMetricsForMachines: %d %v", code, out)
	}

	code, metricsText := get("/metrics")
	if strings.Contains(metricsText, "wasmprov_guest_refused_") {
		t.Errorf("/metrics shows samples the runtime refused:\n%s", metricsText)
	}
	if strings.Contains(metricsText, "wasmprov_guest_fake_") {
		t.Errorf("/metrics shows guest metrics of a provider never asked")
	}
	for _, want := range []string{
		`wasmprov_provider_calls_total{method="Validate",provider="fake"} 2`,
		`wasmprov_provider_call_errors_total{class="transient",method="Validate",provider="fake"} 1`,
		`wasmprov_provider_reloads_total{provider="broken",result="failed"} 1`,
		`wasmprov_provider_info{image="",manifest_digest="",module_sha256="`,
		"# HELP wasmprov_guest_metered_machines Machines the host handed over.\n# TYPE wasmprov_guest_metered_machines gauge\nwasmprov_guest_metered_machines 2\n",
		`wasmprov_guest_metered_machine_up{machine="m1"} 1`,
		`wasmprov_guest_metered_machine_up{machine="m2"} 1`,
		`wasmprov_guest_hetzner_machines{location="fsn1",server_type="cx22"} 2`,
		`wasmprov_guest_hetzner_machines{location="fsn1",server_type="cx32"} 1`,
		"# HELP wasmprov_guest_metered_machine_up Reported by provider metered through SetMetricsForMachines.",
		`wasmprov_provider_guest_metric_families_skipped{provider="metered"} 0`,
		`wasmprov_provider_call_duration_seconds_bucket{method="Get",provider="fake"`,
		`go_goroutines`,
	} {
		if code != 200 || !strings.Contains(metricsText, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// Hot reload: a new provider dropped into the directory is served.
	os.WriteFile(filepath.Join(dir, ".copy.tmp"), fake, 0o644)
	os.Rename(filepath.Join(dir, ".copy.tmp"), filepath.Join(dir, "fake2.wasm"))
	wait.For(t, "fake2 served", func() (bool, string) {
		code, out = post("/v1/providers/fake2/Validate", machine)
		return code == 200, fmt.Sprintf("%d %v", code, out)
	})
	if code, out = post("/v1/providers/fake2/reload", ""); code != 200 || out["sha256"] == "" {
		t.Fatalf("reload: %d %v", code, out)
	}
}

func TestServeFlags(t *testing.T) {
	if err := runServe(context.Background(), nil); err == nil {
		t.Error("serve without --dir succeeded")
	}
	if err := runServe(context.Background(), []string{"--dir", filepath.Join(t.TempDir(), "missing"), "--addr", "127.0.0.1:0", "--cache", ""}); err == nil || !strings.Contains(err.Error(), "provider directory") {
		t.Errorf("missing directory: %v", err)
	}
	if err := runServe(context.Background(), []string{"--dir", t.TempDir(), "--log-format", "xml"}); err == nil {
		t.Error("--log-format xml accepted")
	}
}
