package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testlog"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
	"github.com/wasmprov/wasmprov/runtime/oci"
	"github.com/wasmprov/wasmprov/runtime/registry"
	"github.com/wasmprov/wasmprov/runtime/signature"
)

// TestServeImageEntry runs `wasmprov serve --dir` with an image entry: the
// module comes from a real registry (TLS, basic auth) through the store,
// answers calls, and /v1/providers shows the reference and digest.
func TestServeImageEntry(t *testing.T) {
	fake, err := os.ReadFile(testguest.Build(t, "examples/fake"))
	if err != nil {
		t.Fatal(err)
	}
	reg := testregistry.Start(t, testregistry.Options{User: "bob", Password: "pw", TLS: true})
	dockerConfig := testregistry.DockerConfig(t, reg.Host, "bob", "pw")
	store, err := oci.OpenStore(filepath.Join(t.TempDir(), "pushstore"), 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := oci.New(oci.Options{Store: store, DockerConfig: dockerConfig, RootCAs: reg.CAPool})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Push(context.Background(), fake, reg.Host+"/providers/fake:v1")
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.Host + "/providers/fake@" + d.String()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "fake.provider.yaml"), []byte("image: "+ref+"\npolicy:\n  poolSize: 3\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "typo.provider.yaml"), []byte("image: "+ref+"\nverify: {key: cosign.pub}\n"), 0o644)

	// The same module signed in one repository and not in another: serve
	// verifies an entry's verify block (a signature policy whose key file
	// is relative to the provider directory) before the module loads.
	private, public, err := signature.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, err := signature.ParsePrivateKey(private)
	if err != nil {
		t.Fatal(err)
	}
	signedRef := reg.Host + "/providers/signed:v1"
	if _, err := c.Push(context.Background(), fake, signedRef); err != nil {
		t.Fatal(err)
	}
	if _, _, err := signature.Sign(context.Background(), c, signedRef, key); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Push(context.Background(), fake, reg.Host+"/providers/unsigned:v1"); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "keys"), 0o755)
	os.WriteFile(filepath.Join(dir, "keys", "signer.pub"), public, 0o644)
	const rule = "verify:\n  anyOf: [{publicKeyFile: keys/signer.pub}]\n"
	os.WriteFile(filepath.Join(dir, "signed.provider.yaml"), []byte("image: "+signedRef+"\n"+rule), 0o644)
	os.WriteFile(filepath.Join(dir, "unsigned.provider.yaml"), []byte("image: "+reg.Host+"/providers/unsigned:v1\n"+rule), 0o644)

	logs := &testlog.Buffer{}
	serveLogOutput = logs
	defer func() { serveLogOutput = os.Stderr }()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--dir", dir, "--addr", "127.0.0.1:0", "--log-format", "json",
			"--cache", testguest.CompilationCacheDir(t), "--store", filepath.Join(t.TempDir(), "store"),
			"--docker-config", dockerConfig, "--ca-file", reg.CAFile, "--image-poll-interval", "0"})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	base := serveAddress(t, logs)

	resp, err := http.Post(base+"/v1/providers/fake/Validate", "application/json",
		strings.NewReader(`{"spec": {"providerSpec": {"value": {"cloudProvider": "fake", "cloudProviderSpec": {"passValidation": true}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("Validate: %d %s", resp.StatusCode, body)
	}

	resp, err = http.Get(base + "/v1/providers")
	if err != nil {
		t.Fatal(err)
	}
	var status []map[string]any
	err = json.NewDecoder(resp.Body).Decode(&status)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]any{}
	for _, s := range status {
		byName[s["name"].(string)] = s
	}
	if s := byName["fake"]; s["serving"] != true || s["image"] != ref || s["imageDigest"] != d.String() || s["poolSize"] != float64(3) {
		t.Fatalf("fake status = %v", s)
	}
	if s := byName["signed"]; s["serving"] != true {
		t.Fatalf("signed status = %v", s)
	}
	// Unsigned, or a verify block that is no signature policy: refused,
	// never served unverified, with the reason.
	if s := byName["unsigned"]; s["serving"] != false || !strings.Contains(fmt.Sprint(s["lastError"]), "not signed: no Sigstore bundle") {
		t.Fatalf("unsigned status = %v", s)
	}
	// The typo is an invalid entry, said before anything is pulled.
	if s := byName["typo"]; s["serving"] != false || !strings.Contains(fmt.Sprint(s["lastError"]), "invalid image: verify: signature policy") ||
		s["pullsOK"] != nil || s["pullsFailed"] != nil {
		t.Fatalf("typo status = %v", s)
	}
}

// A verify block given by code (a WasmProvider) names no files: the
// controller reads none of its own files for whoever wrote the resource.
// An image entry's file names stay relative to its directory.
func TestSignatureVerifierRefusesFileNamesFromCode(t *testing.T) {
	dir := t.TempDir()
	_, public, err := signature.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "signer.pub"), public, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := oci.New(oci.Options{PlainHTTP: true, DockerConfig: filepath.Join(dir, "none.json"), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	verify := signatureVerifier(c, slog.New(slog.DiscardHandler))
	for _, doc := range []string{
		`{"anyOf":[{"publicKeyFile":"` + filepath.Join(dir, "signer.pub") + `"}]}`,
		`{"allOf":[{"publicKey":` + strconv.Quote(string(public)) + `},{"publicKeyFile":"` + filepath.Join(dir, "signer.pub") + `"}]}`,
	} {
		err := verify(context.Background(), registry.VerifyRequest{Provider: "p", Ref: "127.0.0.1:1/p:v1", Digest: "sha256:" + strings.Repeat("0", 64), Verify: json.RawMessage(doc)})
		if err == nil || !strings.Contains(err.Error(), "takes its keys inline") {
			t.Errorf("verify block %s from code: err = %v, want a refusal of the file name", doc, err)
		}
	}
	// From an entry in dir the same relative name is read (the check then
	// fails only for want of a registry to fetch signatures from).
	err = verify(context.Background(), registry.VerifyRequest{Provider: "p", Ref: "127.0.0.1:1/p:v1", Digest: "sha256:" + strings.Repeat("0", 64),
		Verify: json.RawMessage(`{"anyOf":[{"publicKeyFile":"signer.pub"}]}`), Entry: filepath.Join(dir, "p.provider.yaml")})
	if err == nil || strings.Contains(err.Error(), "inline") || strings.Contains(err.Error(), "signer.pub") {
		t.Errorf("entry with a relative key file: err = %v, want the key read and the signature fetch to fail", err)
	}
}
