package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"github.com/wasmprov/wasmprov/internal/testing/testregistry"
)

// TestLoginLogout: against a registry with basic auth and TLS, a push
// with no credentials fails with a hint naming login; a wrong password is
// refused in one line that names the fix and stores nothing; the right
// one, from stdin, is stored in the Docker config format, where push then
// finds it; logout removes it, and a second logout says there was none.
// With no --docker-config, $DOCKER_CONFIG/config.json is the file.
func TestLoginLogout(t *testing.T) {
	reg := testregistry.Start(t, testregistry.Options{User: "bob", Password: "pw", TLS: true})
	dir := t.TempDir()
	config := filepath.Join(dir, "docker", "config.json")
	access := []string{"--ca-file", reg.CAFile, "--docker-config", config}
	fake := testguest.Build(t, "examples/fake")
	push := append([]string{"push", fake, reg.Host + "/providers/fake:1", "--store", filepath.Join(dir, "store")}, access...)

	code, _, errOut := runCLI(t, push...)
	if code == 0 || !strings.Contains(errOut, "hint: the registry wants credentials: wasmprov login "+reg.Host+" -u USER --password-stdin") {
		t.Fatalf("push without credentials: exit %d\n%s", code, errOut)
	}

	code, out, errOut := runCLI(t, append([]string{"login", reg.Host, "-u", "bob", "-p", "wrong"}, access...)...)
	if code == 0 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 ||
		!strings.Contains(errOut, `refused user "bob"`) || !strings.Contains(errOut, "check both") || strings.Contains(errOut, "map[") {
		t.Fatalf("login with a wrong password: exit %d, stdout %q, stderr %q; want one line naming the fix", code, out, errOut)
	}
	if b, err := os.ReadFile(config); err == nil && strings.Contains(string(b), reg.Host) {
		t.Fatalf("refused credentials were stored: %s", b)
	}

	stdin = strings.NewReader("pw\n")
	defer func() { stdin = os.Stdin }()
	code, out, errOut = runCLI(t, append([]string{"login", "https://" + reg.Host + "/", "-u", "bob", "--password-stdin"}, access...)...)
	if code != 0 || !strings.Contains(out, "logged in to "+reg.Host+" as bob") || !strings.Contains(out, config) {
		t.Fatalf("login: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	var cfg struct {
		Auths map[string]struct{ Auth string } `json:"auths"`
	}
	if b, err := os.ReadFile(config); err != nil || json.Unmarshal(b, &cfg) != nil || cfg.Auths[reg.Host].Auth == "" {
		t.Fatalf("config after login: %v, %+v", err, cfg.Auths)
	}
	if code, _, errOut := runCLI(t, push...); code != 0 {
		t.Fatalf("push with the stored credentials: %s", errOut)
	}

	for _, want := range []string{"logged out of " + reg.Host, "not logged in to " + reg.Host} {
		code, out, errOut = runCLI(t, "logout", reg.Host, "--docker-config", config)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("logout: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
		}
	}
	if code, _, errOut := runCLI(t, push...); code == 0 || !strings.Contains(errOut, "wasmprov login") {
		t.Fatalf("push after logout: exit %d\n%s", code, errOut)
	}

	if code, _, errOut := runCLI(t, "login", reg.Host, "-u", "bob", "-p", "pw", "--password-stdin"); code == 0 || !strings.Contains(errOut, "either -p PASSWORD or --password-stdin") {
		t.Errorf("login with -p and --password-stdin: exit %d\n%s", code, errOut)
	}

	home := filepath.Join(dir, "env")
	t.Setenv("DOCKER_CONFIG", home)
	code, out, errOut = runCLI(t, "login", reg.Host, "-u", "bob", "-p", "pw", "--ca-file", reg.CAFile)
	if b, err := os.ReadFile(filepath.Join(home, "config.json")); code != 0 || err != nil || !strings.Contains(string(b), reg.Host) {
		t.Fatalf("login to $DOCKER_CONFIG: exit %d, %s %s, config %v", code, out, errOut, err)
	}
}
