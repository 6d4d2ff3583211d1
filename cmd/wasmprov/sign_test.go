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

// TestVerifyKeyShorthand: verify --key KEY.pub checks against that one
// key, as a one-rule policy would; another key fails naming the rule;
// --key and --policy together, or neither, are refused with the usage;
// keygen -o - refuses to print a private key and writes no file.
func TestVerifyKeyShorthand(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{})
	dir := t.TempDir()
	t.Chdir(dir)
	common := []string{"--plain-http", "--store", filepath.Join(dir, "store")}
	key, other := filepath.Join(dir, "release.key"), filepath.Join(dir, "other.key")
	for _, k := range []string{key, other} {
		if code, _, errOut := runCLI(t, "keygen", "-o", k); code != 0 {
			t.Fatal(errOut)
		}
	}
	ref := reg.Host + "/providers/fake:1"
	if code, _, errOut := runCLI(t, append([]string{"push", testguest.Build(t, "examples/fake"), ref}, common...)...); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := runCLI(t, append([]string{"sign", "--key", key, ref}, common...)...)
	if code != 0 {
		t.Fatal(errOut)
	}
	pinned := strings.TrimPrefix(strings.SplitN(out, "\n", 2)[0], "signed ")
	code, out, errOut = runCLI(t, append([]string{"verify", ref, "--key", key + ".pub"}, common...)...)
	if code != 0 || !strings.HasPrefix(out, "verified "+pinned+": key sha256:") {
		t.Fatalf("verify --key: exit %d, %q\n%s", code, out, errOut)
	}
	code, _, errOut = runCLI(t, append([]string{"verify", ref, "--key", other + ".pub"}, common...)...)
	if code == 0 || !strings.Contains(errOut, "anyOf: 0 of 1 matched") {
		t.Fatalf("verify --key with another key: exit %d\n%s", code, errOut)
	}
	policy := filepath.Join(dir, "policy.yaml")
	os.WriteFile(policy, []byte("anyOf:\n- publicKeyFile: release.key.pub\n"), 0o644)
	for _, flags := range [][]string{{"--key", key + ".pub", "--policy", policy}, nil} {
		code, out, errOut := runCLI(t, append(append([]string{"verify", ref}, flags...), common...)...)
		if code == 0 || out != "" || !strings.Contains(errOut, "exactly one of --key KEY.pub (one public key) and --policy FILE") || !strings.Contains(errOut, "usage:") {
			t.Errorf("verify %v: exit %d, stdout %q\n%s", flags, code, out, errOut)
		}
	}

	code, out, errOut = runCLI(t, "keygen", "-o", "-")
	if code == 0 || out != "" || !strings.Contains(errOut, "does not write a private key to stdout") {
		t.Errorf("keygen -o -: exit %d, stdout %q\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Error(`keygen -o - wrote a file named "-"`)
	}
}
