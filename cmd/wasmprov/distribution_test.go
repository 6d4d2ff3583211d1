package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wasmprov/wasmprov/examples/hetzner/hcloudsim"
	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testlog"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
	"github.com/wasmprov/wasmprov/internal/testing/wait"
	"github.com/wasmprov/wasmprov/runtime/metadata"
	"github.com/wasmprov/wasmprov/runtime/oci"
	"github.com/wasmprov/wasmprov/runtime/signature"
)

// TestDistributionEndToEnd is the supply-chain path as an operator runs
// it: the annotated Hetzner guest pushed to a registry (TLS) by tag and
// signed; `wasmprov serve` with an image entry naming the tag and a
// signature rule serves Validate; a new signed version pushed to the tag
// is swapped in with no failed call while calls run; an unsigned one is
// refused and the signed one keeps serving; and the pinned version
// travels through save and load to a store that pulls it with the
// registry gone.
func TestDistributionEndToEnd(t *testing.T) {
	ctx := context.Background()
	hetzner, err := os.ReadFile(testguest.Build(t, "examples/hetzner"))
	if err != nil {
		t.Fatal(err)
	}
	annotated := func(version string) []byte {
		b, err := metadata.Write(hetzner, &metadata.Metadata{Name: "hetzner", Version: version,
			Source: "https://github.com/wasmprov/wasmprov"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	reg := testregistry.Start(t, testregistry.Options{TLS: true})
	pushStore, err := oci.OpenStore(filepath.Join(t.TempDir(), "push"), 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := oci.New(oci.Options{Store: pushStore, RootCAs: reg.CAPool})
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
	tag := reg.Host + "/providers/hetzner:stable"
	push := func(wasm []byte, sign bool) string {
		t.Helper()
		d, err := c.Push(ctx, wasm, tag)
		if err != nil {
			t.Fatal(err)
		}
		if sign {
			if _, _, err := signature.Sign(ctx, c, tag, key); err != nil {
				t.Fatal(err)
			}
		}
		return d.String()
	}
	v1 := push(annotated("1.0.0"), true)

	// The calls below would spend the simulated API's hourly budget
	// (3,600 requests, as Hetzner's); failures here must be the swap's.
	sim, err := hcloudsim.Start(hcloudsim.Options{RateLimit: 1 << 30}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "release.pub"), public, 0o644)
	os.WriteFile(filepath.Join(dir, "hetzner.provider.yaml"), []byte("image: "+tag+"\n"+
		"pullPolicy: Always\n"+
		"policy:\n  allowedHosts: [\"127.0.0.1:*\"]\n  allowInsecureHTTP: true\n"+
		"verify:\n  anyOf: [{publicKeyFile: release.pub}]\n"), 0o644)

	logs := &testlog.Buffer{}
	serveLogOutput = logs
	defer func() { serveLogOutput = os.Stderr }()
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- runServe(sctx, []string{"--dir", dir, "--addr", "127.0.0.1:0", "--log-format", "json",
			"--cache", testguest.CompilationCacheDir(t), "--store", filepath.Join(t.TempDir(), "serve"),
			"--ca-file", reg.CAFile, "--image-poll-interval", "200ms"})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	base := serveAddress(t, logs)

	status := func() map[string]any {
		resp, err := http.Get(base + "/v1/providers")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var list []map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if s["name"] == "hetzner" {
				return s
			}
		}
		return nil
	}
	waitFor := func(what string, ok func(map[string]any) bool) {
		t.Helper()
		wait.For(t, what, func() (bool, string) {
			s := status()
			return ok(s), fmt.Sprintf("status %v\n%s", s, logs.String())
		})
	}
	waitFor("v1 serving", func(s map[string]any) bool { return s["serving"] == true && s["imageDigest"] == v1 })

	spec := fmt.Sprintf(`{"spec": {"providerSpec": {"value": {"cloudProvider": "hetzner", "operatingSystem": "ubuntu",
		"operatingSystemSpec": {}, "cloudProviderSpec": {"token": "sim-token", "serverType": "cx22", "location": "fsn1", "endpoint": %q}}}}}`, sim.URL)
	validate := func() error {
		resp, err := http.Post(base+"/v1/providers/hetzner/Validate", "application/json", strings.NewReader(spec))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("Validate: %d %s", resp.StatusCode, strings.Join(strings.Fields(string(b)), " "))
		}
		return nil
	}
	if err := validate(); err != nil {
		t.Fatal(err)
	}

	// Calls run while the tag moves.
	var calls, failed atomic.Int64
	var firstFailure atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				calls.Add(1)
				if err := validate(); err != nil {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	v2 := push(annotated("1.0.1"), true)
	waitFor("the signed v2 swapped in", func(s map[string]any) bool { return s["imageDigest"] == v2 })
	v3 := push(annotated("1.0.2"), false)
	waitFor("the unsigned v3 refused", func(s map[string]any) bool {
		e, _ := s["lastError"].(string)
		return strings.Contains(e, v3) && strings.Contains(e, "not signed")
	})
	// A poll or two more: v3 stays refused. Each poll refuses it again
	// (reloadsFailed); the one in flight may be counted already.
	refusals, _ := status()["reloadsFailed"].(float64)
	waitFor("two more polls refusing v3", func(s map[string]any) bool {
		n, _ := s["reloadsFailed"].(float64)
		return n >= refusals+2
	})
	close(stop)
	wg.Wait()
	if s := status(); s["imageDigest"] != v2 || s["serving"] != true {
		t.Errorf("after the unsigned push: %v, want v2 %s serving", s, v2)
	}
	if n := failed.Load(); n != 0 {
		t.Errorf("%d of %d calls failed while the tag moved; first: %v", n, calls.Load(), firstFailure.Load())
	} else {
		t.Logf("%d calls across two tag moves, none failed", calls.Load())
	}

	// The pinned v2 through an air gap: save with the registry up, load
	// into another store, pull by digest with the registry stopped.
	pinned := reg.Host + "/providers/hetzner@" + v2
	bundle := filepath.Join(t.TempDir(), "bundle.tar")
	if code, _, errOut := runCLI(t, "save", pinned, "-o", bundle, "--store", filepath.Join(t.TempDir(), "s"), "--ca-file", reg.CAFile); code != 0 {
		t.Fatalf("save: %s", errOut)
	}
	reg.Server.Close()
	offline := filepath.Join(t.TempDir(), "offline")
	if code, _, errOut := runCLI(t, "load", bundle, "--store", offline); code != 0 {
		t.Fatalf("load: %s", errOut)
	}
	out := filepath.Join(t.TempDir(), "hetzner.wasm")
	if code, _, errOut := runCLI(t, "pull", pinned, "-o", out, "--store", offline, "--ca-file", reg.CAFile); code != 0 {
		t.Fatalf("pull with the registry stopped: %s", errOut)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, annotated("1.0.1")) {
		t.Errorf("the module pulled offline is not v2 (%d bytes)", len(got))
	}
}

// serveAddress waits for serve's JSON log to say where it listens and
// that it is ready.
func serveAddress(t *testing.T, logs *testlog.Buffer) string {
	t.Helper()
	var base string
	wait.For(t, "serve ready", func() (bool, string) {
		ready := strings.Contains(logs.String(), `"msg":"ready"`)
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["msg"] == "serving" {
				base = "http://" + rec["addr"].(string)
			}
		}
		return base != "" && ready, logs.String()
	})
	return base
}
