package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
)

// TestSignVerifyCommands: keygen, push, sign, verify against a real
// registry (TLS, basic auth), with the tag-schema fallback forced for one
// module; verify of an unsigned module and with another key's policy
// fails naming the rule; keygen does not overwrite a key.
func TestSignVerifyCommands(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{User: "bob", Password: "pw", TLS: true})
	dir := t.TempDir()
	common := []string{"--docker-config", testregistry.DockerConfig(t, reg.Host, "bob", "pw"), "--ca-file", reg.CAFile, "--store", filepath.Join(dir, "store")}
	fake := testguest.Build(t, "examples/fake")
	key, other := filepath.Join(dir, "release.key"), filepath.Join(dir, "other.key")
	for _, k := range []string{key, other} {
		if out, err := run(t, "keygen", "-o", k); err != nil || out != k+"\n"+k+".pub\n" {
			t.Fatalf("keygen: %q, %v", out, err)
		}
	}
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("private key mode: %v, %v", fi, err)
	}
	if _, err := run(t, "keygen", "-o", key); err == nil {
		t.Fatal("keygen overwrote an existing key")
	}
	policy := filepath.Join(dir, "policy.yaml")
	os.WriteFile(policy, []byte("anyOf:\n- publicKeyFile: release.key.pub\n"), 0o644)
	otherPolicy := filepath.Join(dir, "other.yaml")
	os.WriteFile(otherPolicy, []byte("anyOf:\n- publicKeyFile: other.key.pub\n"), 0o644)

	for _, fallback := range []bool{false, true} {
		ref := reg.Host + "/providers/fake:1"
		flags := common
		if fallback {
			ref = reg.Host + "/providers/fake-tags:1"
			flags = append([]string{"--no-referrers-api"}, common...)
		}
		pushed, err := run(t, append([]string{"push", fake, ref}, common...)...)
		if err != nil {
			t.Fatal(err)
		}
		pinned := strings.TrimSpace(pushed)
		if _, err := run(t, append([]string{"verify", ref, "--policy", policy}, flags...)...); err == nil || !strings.Contains(err.Error(), "not signed") {
			t.Fatalf("verify unsigned: %v", err)
		}
		out, err := run(t, append([]string{"sign", "--key", key, ref}, flags...)...)
		if err != nil || !strings.HasPrefix(out, "signed "+pinned+"\nsignature ") {
			t.Fatalf("sign: %q, %v (pushed %s)", out, err, pinned)
		}
		out, err = run(t, append([]string{"verify", pinned, "--policy", policy}, flags...)...)
		if err != nil || !strings.HasPrefix(out, "verified "+pinned+": key sha256:") {
			t.Fatalf("verify: %q, %v", out, err)
		}
		_, err = run(t, append([]string{"verify", ref, "--policy", otherPolicy}, flags...)...)
		if err == nil || !strings.Contains(err.Error(), "anyOf: 0 of 1 matched") || !strings.Contains(err.Error(), "signature invalid") {
			t.Fatalf("verify with another key: %v", err)
		}
	}
}
