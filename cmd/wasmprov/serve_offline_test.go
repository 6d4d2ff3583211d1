package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testlog"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
	"github.com/wasmprov/wasmprov/runtime/metadata"
	"github.com/wasmprov/wasmprov/runtime/oci"
	"github.com/wasmprov/wasmprov/runtime/signature"
)

// serveRun is one `wasmprov serve` process, as far as a test can tell:
// its address and its JSON log.
type serveRun struct {
	base string
	logs *testlog.Buffer
	stop func()
}

// startServe runs serve on dir with the store and args given, until
// stop (or the test's end).
func startServe(t *testing.T, dir, store string, args ...string) *serveRun {
	t.Helper()
	logs := &testlog.Buffer{}
	serveLogOutput = logs
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	all := append([]string{"--dir", dir, "--addr", "127.0.0.1:0", "--log-format", "json",
		"--cache", testguest.CompilationCacheDir(t), "--store", store, "--image-poll-interval", "0",
		"--docker-config", filepath.Join(t.TempDir(), "none.json")}, args...)
	go func() { done <- runServe(ctx, all) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		serveLogOutput = os.Stderr
	}
	t.Cleanup(stop)
	return &serveRun{base: serveAddress(t, logs), logs: logs, stop: stop}
}

// get returns the status code and body of GET path.
func (s *serveRun) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(s.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// post returns the status code and body of POST path with body.
func (s *serveRun) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(s.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// provider returns the status serve reports of name (nil: none).
func (s *serveRun) provider(t *testing.T, name string) map[string]any {
	t.Helper()
	_, body := s.get(t, "/v1/providers")
	var status []map[string]any
	if err := json.Unmarshal([]byte(body), &status); err != nil {
		t.Fatalf("/v1/providers: %v: %s", err, body)
	}
	for _, st := range status {
		if st["name"] == name {
			return st
		}
	}
	return nil
}

const validateBody = `{"spec": {"providerSpec": {"value": {"cloudProvider": "fake", "cloudProviderSpec": {"passValidation": true}}}}}`

// TestServeVerifiedOffline: a signed provider pinned by digest, with a
// verify block, is verified through the registry once; with the
// registry down, serve restarts and serves it, verified from the store;
// saved with its signature and loaded into a fresh store, it serves there
// too with no registry; a stored signature damaged on disk is refused
// with the reason, and /readyz and the call API say that the configured
// provider does not serve.
func TestServeVerifiedOffline(t *testing.T) {
	fake, err := os.ReadFile(testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	reg := testregistry.Start(t, testregistry.Options{})
	ctx := context.Background()
	pusher, err := oci.New(oci.Options{PlainHTTP: true, DockerConfig: filepath.Join(t.TempDir(), "none.json")})
	if err != nil {
		t.Fatal(err)
	}
	d, err := pusher.Push(ctx, fake, reg.Host+"/providers/fake:v1")
	if err != nil {
		t.Fatal(err)
	}
	private, public, err := signature.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, err := signature.ParsePrivateKey(private)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := signature.Sign(ctx, pusher, reg.Host+"/providers/fake:v1", key); err != nil {
		t.Fatal(err)
	}
	pinned := reg.Host + "/providers/fake@" + d.String()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "signer.pub"), public, 0o644)
	os.WriteFile(filepath.Join(dir, "fake.provider.yaml"),
		[]byte("image: "+pinned+"\nverify:\n  anyOf: [{publicKeyFile: signer.pub}]\n"), 0o644)
	store := filepath.Join(t.TempDir(), "store")

	online := startServe(t, dir, store, "--plain-http")
	if code, body := online.post(t, "/v1/providers/fake/Validate", validateBody); code != 200 {
		t.Fatalf("online Validate: %d %s", code, body)
	}
	if !strings.Contains(online.logs.String(), `"from":"registry"`) {
		t.Fatalf("the first verification did not go to the registry:\n%s", online.logs)
	}
	// The long steps show: the fetch of the module and the load.
	for _, want := range []string{`"msg":"fetching module"`, `"msg":"fetched module"`, `"msg":"loading provider version"`, `"msg":"provider serving"`, `"took":`} {
		if !strings.Contains(online.logs.String(), want) {
			t.Errorf("serve's log lacks %s", want)
		}
	}
	online.stop()

	reg.SetDown(true)
	restarted := startServe(t, dir, store, "--plain-http")
	if st := restarted.provider(t, "fake"); st["serving"] != true || st["imageDigest"] != d.String() {
		t.Fatalf("after a restart with the registry down: %v\n%s", st, restarted.logs)
	}
	if !strings.Contains(restarted.logs.String(), `"msg":"signature verified"`) || !strings.Contains(restarted.logs.String(), `"from":"store"`) {
		t.Fatalf("not verified from the store:\n%s", restarted.logs)
	}
	if code, body := restarted.post(t, "/v1/providers/fake/Validate", validateBody); code != 200 {
		t.Fatalf("offline Validate: %d %s", code, body)
	}
	restarted.stop()

	// The air gap: save (the registry still down: the store's signature
	// goes in), load into a fresh store, serve from it.
	bundle := filepath.Join(t.TempDir(), "providers.tar")
	if code, out, errOut := runCLI(t, "save", pinned, "-o", bundle, "--store", store, "--plain-http"); code != 0 {
		t.Fatalf("save: %d %s %s", code, out, errOut)
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
	code, out, errOut := runCLI(t, "load", bundle, "--store", fresh)
	if code != 0 || !strings.Contains(out+errOut, "1 signature") {
		t.Fatalf("load: %d %q %q", code, out, errOut)
	}
	gap := startServe(t, dir, fresh, "--plain-http")
	if st := gap.provider(t, "fake"); st["serving"] != true {
		t.Fatalf("air-gapped: %v\n%s", st, gap.logs)
	}
	gap.stop()

	// The stored signature damaged on disk: refused, and said why.
	fs, err := oci.OpenStore(fresh, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := oci.New(oci.Options{Store: fs, DockerConfig: filepath.Join(t.TempDir(), "none.json")})
	if err != nil {
		t.Fatal(err)
	}
	refs, err := c.StoredReferrers(pinned, signature.BundleMediaType)
	if err != nil || len(refs) != 1 {
		t.Fatalf("stored signatures: %v, %v", refs, err)
	}
	blob := filepath.Join(fresh, "blobs", "sha256", digest.FromBytes(refs[0].Data).Encoded())
	if err := os.WriteFile(blob, bytes.Replace(refs[0].Data, []byte(`"`), []byte(`'`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	damaged := startServe(t, dir, fresh, "--plain-http")
	st := damaged.provider(t, "fake")
	if st["serving"] != false || !strings.Contains(st["lastError"].(string), "damaged in the local store") {
		t.Fatalf("a damaged stored signature: %v", st)
	}
	if n := strings.Count(st["lastError"].(string), pinned); n != 1 {
		t.Errorf("the error names the reference %d times, want once: %s", n, st["lastError"])
	}
	if code, body := damaged.get(t, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"notServing": [`+"\n"+`    "fake"`) {
		t.Fatalf("/readyz with a provider not serving: %d %s", code, body)
	}
	if code, body := damaged.post(t, "/v1/providers/fake/Validate", validateBody); code != http.StatusServiceUnavailable || !strings.Contains(body, "failed to load") {
		t.Fatalf("a call to a configured provider that failed to load: %d %s", code, body)
	}
	if code, _ := damaged.post(t, "/v1/providers/nobody/Validate", validateBody); code != http.StatusNotFound {
		t.Fatalf("a call to no provider: %d", code)
	}
}

// TestServeLastKnownGood: a tag entry whose registry is down when serve
// restarts serves what the tag last resolved to, marked stale in the
// status, the metrics and /readyz (which stays ready: it serves); when
// the registry is back, a reload converges on what the tag names now.
func TestServeLastKnownGood(t *testing.T) {
	fake, err := os.ReadFile(testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := metadata.Write(fake, &metadata.Metadata{Name: "fake", Version: "2.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	reg := testregistry.Start(t, testregistry.Options{})
	ctx := context.Background()
	pusher, err := oci.New(oci.Options{PlainHTTP: true, DockerConfig: filepath.Join(t.TempDir(), "none.json")})
	if err != nil {
		t.Fatal(err)
	}
	tag := reg.Host + "/providers/fake:stable"
	d1, err := pusher.Push(ctx, fake, tag)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "fake.provider.yaml"), []byte("image: "+tag+"\n"), 0o644)
	store := filepath.Join(t.TempDir(), "store")
	first := startServe(t, dir, store, "--plain-http")
	if st := first.provider(t, "fake"); st["serving"] != true || st["imageDigest"] != d1.String() {
		t.Fatalf("first start: %v", st)
	}
	first.stop()

	d2, err := pusher.Push(ctx, v2, tag) // the tag moves during the outage
	if err != nil {
		t.Fatal(err)
	}
	reg.SetDown(true)
	s := startServe(t, dir, store, "--plain-http")
	st := s.provider(t, "fake")
	if st["serving"] != true || st["stale"] != true || st["imageDigest"] != d1.String() || !strings.Contains(st["staleReason"].(string), "resolving the image") {
		t.Fatalf("restarted during the outage: %v", st)
	}
	if code, body := s.get(t, "/readyz"); code != 200 || !strings.Contains(body, `"stale": [`+"\n"+`    "fake"`) {
		t.Fatalf("/readyz with a stale provider: %d %s", code, body)
	}
	_, metricsText := s.get(t, "/metrics")
	for _, want := range []string{
		`wasmprov_provider_stale{provider="fake"} 1`,
		`wasmprov_provider_info{image="` + tag + `",manifest_digest="` + d1.String() + `",module_sha256="`,
		`wasmprov_provider_image_pulls_total{provider="fake",result="failed"} 1`,
	} {
		if !strings.Contains(metricsText, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if code, body := s.post(t, "/v1/providers/fake/Validate", validateBody); code != 200 {
		t.Fatalf("Validate on the last known good: %d %s", code, body)
	}

	reg.SetDown(false)
	if code, body := s.post(t, "/v1/providers/fake/reload", ""); code != 200 {
		t.Fatalf("reload with the registry back: %d %s", code, body)
	}
	st = s.provider(t, "fake")
	if st["stale"] != nil || st["imageDigest"] != d2.String() || st["lastError"] != nil {
		t.Fatalf("after the outage: %v", st)
	}
}
