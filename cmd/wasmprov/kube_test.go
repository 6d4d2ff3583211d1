//go:build !nokube

package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// --secret-file and --configmap-file read YAML (several documents, empty
// ones skipped) and JSON; stringData is folded into data as the API server
// does; no namespace means "default".
func TestFileClient(t *testing.T) {
	secrets := writeFile(t, "s.yaml", `# leading comment
---
apiVersion: v1
kind: Secret
metadata: {name: a, namespace: ns1}
data: {k: dmFsdWUtYQ==}
---
---
apiVersion: v1
kind: Secret
metadata: {name: b}
data: {k: b2xk}
stringData: {k: new, other: x}
`)
	secretJSON := writeFile(t, "s.json", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"c","namespace":"ns2"},"stringData":{"k":"value-c"}}`)
	cms := writeFile(t, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m, namespace: ns1}\ndata: {k: value-m}\n")
	k := &kubeFlags{secretFiles: listFlag{secrets, secretJSON}, configMapFiles: listFlag{cms}}
	c, err := k.client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct{ ns, name, key, want string }{
		{"ns1", "a", "k", "value-a"},
		{"default", "b", "k", "new"},
		{"default", "b", "other", "x"},
		{"ns2", "c", "k", "value-c"},
	} {
		s, err := c.CoreV1().Secrets(tc.ns).Get(ctx, tc.name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("Secret %s/%s: %v", tc.ns, tc.name, err)
			continue
		}
		if got := string(s.Data[tc.key]); got != tc.want {
			t.Errorf("Secret %s/%s key %s = %q, want %q", tc.ns, tc.name, tc.key, got, tc.want)
		}
	}
	cm, err := c.CoreV1().ConfigMaps("ns1").Get(ctx, "m", metav1.GetOptions{})
	if err != nil || cm.Data["k"] != "value-m" {
		t.Errorf("ConfigMap ns1/m: %+v, %v", cm, err)
	}

	for name, tc := range map[string]struct {
		k    kubeFlags
		want string
	}{
		"wrong kind": {kubeFlags{secretFiles: listFlag{cms}}, `has kind "ConfigMap", want Secret`},
		"duplicate":  {kubeFlags{secretFiles: listFlag{secrets, secrets}}, "Secret ns1/a is also in"},
		"no name":    {kubeFlags{secretFiles: listFlag{writeFile(t, "n.yaml", "kind: Secret\nmetadata: {namespace: x}\n")}}, "no metadata.name"},
		"empty":      {kubeFlags{configMapFiles: listFlag{writeFile(t, "e.yaml", "# nothing\n")}}, "holds no ConfigMap"},
		"unknown field": {kubeFlags{secretFiles: listFlag{writeFile(t, "u.yaml", "kind: Secret\nmetadata: {name: x}\ndatta: {}\n")}},
			"not a valid Secret"},
		"missing file": {kubeFlags{secretFiles: listFlag{filepath.Join(t.TempDir(), "none.yaml")}}, "no such file"},
		"both sources": {kubeFlags{kubeconfig: "kc", secretFiles: listFlag{secrets}}, "exclude each other"},
	} {
		if _, err := tc.k.client(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, tc.want)
		}
	}
	if c, err := (&kubeFlags{}).client(); c != nil || err != nil {
		t.Errorf("no flags: want no client, got %v, %v", c, err)
	}
}

// --kubeconfig uses the current context's cluster, and the client only
// reads: a write never reaches the API server.
func TestKubeconfigClientReadsOnly(t *testing.T) {
	var methods []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		methods = append(methods, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"ns"},"data":{"k":"dg=="}}`))
	}))
	defer api.Close()
	kubeconfig := writeFile(t, "kubeconfig", `apiVersion: v1
kind: Config
current-context: right
contexts:
- name: right
  context: {cluster: right}
- name: wrong
  context: {cluster: wrong}
clusters:
- name: right
  cluster: {server: `+api.URL+`}
- name: wrong
  cluster: {server: "http://127.0.0.1:1"}
users: []
`)
	c, err := (&kubeFlags{kubeconfig: kubeconfig}).client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := c.CoreV1().Secrets("ns").Get(ctx, "s", metav1.GetOptions{})
	if err != nil || string(s.Data["k"]) != "v" {
		t.Fatalf("Get through the current context: %+v, %v", s, err)
	}
	if err := c.CoreV1().Secrets("ns").Delete(ctx, "s", metav1.DeleteOptions{}); err == nil || !strings.Contains(err.Error(), "only reads") {
		t.Errorf("Delete: %v, want a refusal", err)
	}
	if len(methods) != 1 || methods[0] != "GET /api/v1/namespaces/ns/secrets/s" {
		t.Errorf("the API server saw %v, want the one GET", methods)
	}
}

// conformance takes the same flags and passes the client to the run; a
// file that cannot be read is an error naming the flag.
func TestConformanceKubeFlags(t *testing.T) {
	secret := writeFile(t, "s.yaml", "kind: Secret\nmetadata: {name: s}\n")
	// The file is read and handed to the run (conformance.Config.Kube): what
	// fails is the missing module, not the flag.
	code, _, errOut := runCLI(t, "conformance", "-spec", "{}", "--secret-file", secret, "nosuch.wasm")
	if code == 0 || !strings.Contains(errOut, "nosuch.wasm") || strings.Contains(errOut, "secret-file") {
		t.Errorf("exit %d, stderr %q; want only the missing module reported", code, errOut)
	}
	code, _, errOut = runCLI(t, "conformance", "-spec", "{}", "--secret-file", filepath.Join(t.TempDir(), "none.yaml"), "nosuch.wasm")
	if code == 0 || !strings.Contains(errOut, "--secret-file") {
		t.Errorf("a missing file: exit %d, stderr %q", code, errOut)
	}
}

// conformance --policy reads the same files as call: YAML or JSON, and
// strictly, so a misspelt field is an error rather than a restriction
// silently dropped (it used to be decoded case-insensitively, unknown
// fields ignored).
func TestConformancePolicyFileIsStrictYAMLOrJSON(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, f := range []string{
		write("p.yaml", "allowedHosts: [\"127.0.0.1:*\"]\nallowInsecureHTTP: true\n"),
		write("p.json", `{"allowedHosts":["127.0.0.1:*"],"allowInsecureHTTP":true}`),
	} {
		p, err := readPolicyFile(f)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		if len(p.AllowedHosts) != 1 || p.AllowedHosts[0] != "127.0.0.1:*" || !p.AllowInsecureHTTP {
			t.Errorf("%s: read %+v", filepath.Base(f), p)
		}
	}
	for _, body := range []string{"allowedhosts: [x]\n", `{"allowedHosts":["x"],"allowInsecureHttp":true}`} {
		if _, err := readPolicyFile(write("bad", body)); err == nil || !strings.Contains(err.Error(), "--policy") {
			t.Errorf("%q: error %v, want a refusal naming --policy", body, err)
		}
	}
}
