package hostmodule

// Fuzz targets for every host-side decoder and host function argument
// path. Seeds are in testdata/fuzz/<Target>; `make fuzz-smoke` runs each
// briefly. docs/SECURITY.md records how long each ran locally and what it
// found.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/provider"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

func fuzzEnv() *Env {
	return &Env{
		Provider: "fuzz",
		Logger:   slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug})),
		HTTP: NewHTTP(HTTPPolicy{
			AllowedHosts: []string{"api.example.com", "*.example.net"},
			// No host resolves: nothing leaves the process.
			Resolver: &stubResolver{answers: map[string][]string{}},
			Timeout:  100 * time.Millisecond,
		}),
		ConfigVar: ConfigVarSource{AllowedEnv: []string{"FUZZ_ENV"},
			LookupEnv: func(string) (string, bool) { return "from-env", true }},
	}
}

func fuzzMachine() *clusterv1alpha1.Machine {
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", UID: "u",
		Finalizers: []string{"f"}, Labels: map[string]string{"a": "b"}}}
	m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: []byte(
		`{"cloudProviderSpec":{"token":{"secretKeyRef":{"namespace":"ns","name":"s","key":"k"}}}}`)}
	return m
}

// checkResult asserts the contract of a data host function: a result or
// an *Error with a defined errno and a message.
func checkResult(t *testing.T, out []byte, err error) {
	if err == nil {
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("non-errno error %T: %v", err, err)
	}
	if e.Errno.String() == "" || strings.HasPrefix(e.Errno.String(), "Errno(") {
		t.Fatalf("undefined errno %d", e.Errno)
	}
	_ = out
}

func FuzzHTTPRequest(f *testing.F) {
	for _, s := range []string{
		`{"method":"GET","url":"https://api.example.com/v1/servers"}`,
		`{"method":"POST","url":"https://x.example.net/","header":{"Authorization":["Bearer t"]},"body":"aGVsbG8="}`,
		`{"method":"GET","url":"https://10.0.0.1:8443/"}`, // not allowed: no IP literal in the list
		`{"method":"GET","url":"http://169.254.169.254/latest/meta-data/"}`,
		`{"method":"GET","url":"https://api.example.com@127.0.0.1/"}`,
		`{"method":"","url":"https://[::1]/","header":{"Host":["evil"]}}`,
		`{"url":"file:///etc/passwd"}`, `null`, `[]`, `{"body":"!!"}`,
	} {
		f.Add([]byte(s))
	}
	env := fuzzEnv()
	f.Fuzz(func(t *testing.T, req []byte) {
		c := NewCall(context.Background(), env, abi.MethodGet, abi.CapHTTP)
		out, err := c.Invoke(abi.ImportHTTP, req)
		checkResult(t, out, err)
		if err == nil {
			t.Fatalf("a request succeeded with no reachable host: %s", req)
		}
	})
}

func FuzzHTTPAllow(f *testing.F) {
	f.Add("api.example.com", "https://api.example.com/x", false)
	f.Add("*.example.com", "https://a.example.com:443/", false)
	f.Add("127.0.0.1:8080", "http://127.0.0.1:8080/", true)
	f.Add("*.example.com", "https://example.com/", false)
	f.Add("[::1]:80", "http://[::1]:80/", true)
	f.Add("[::1]", "http://[::1]:80", true) // found by fuzz-smoke, cold CI 2026-12-07: the oracle, not Allow, was wrong
	f.Fuzz(func(t *testing.T, pattern, rawURL string, insecure bool) {
		u, err := url.Parse(rawURL)
		if err != nil {
			return
		}
		p := &HTTPPolicy{AllowedHosts: []string{pattern}, AllowInsecure: insecure}
		if p.Allow(u) != nil {
			return
		}
		if u.Scheme != "https" && (u.Scheme != "http" || !insecure) {
			t.Fatalf("allowed scheme %q (insecure=%v)", u.Scheme, insecure)
		}
		if u.User != nil {
			t.Fatalf("allowed user info in %q", rawURL)
		}
		host := strings.ToLower(u.Hostname())
		pat := strings.ToLower(pattern)
		if h, _, err := splitPattern(pat); err == nil {
			pat = h
		} else if strings.HasPrefix(pat, "[") && strings.HasSuffix(pat, "]") {
			// A bracketed IPv6 literal without a port ("[::1]") names
			// that address at the scheme's default port.
			pat = pat[1 : len(pat)-1]
		}
		if suffix, ok := strings.CutPrefix(pat, "*."); ok {
			if !strings.HasSuffix(host, "."+suffix) {
				t.Fatalf("%q allowed by %q", host, pattern)
			}
		} else if host != pat {
			t.Fatalf("%q allowed by %q", host, pattern)
		}
	})
}

func splitPattern(p string) (string, string, error) {
	u, err := url.Parse("//" + p)
	if err != nil || u.Port() == "" {
		return "", "", errors.New("no port")
	}
	return u.Hostname(), u.Port(), nil
}

func FuzzInternalAddr(f *testing.F) {
	f.Add([]byte{169, 254, 169, 254})
	f.Add([]byte{8, 8, 8, 8})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1})
	f.Add([]byte{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		reason := internalAddr(a)
		// A v4-mapped v6 address is judged as its v4 address.
		if a.Is4() {
			if m := internalAddr(netip.AddrFrom16(a.As16())); m != reason {
				t.Fatalf("%v: %q, mapped: %q", a, reason, m)
			}
		}
		u := a.Unmap()
		if (u.IsLoopback() || u.IsPrivate() || u.IsLinkLocalUnicast() || u.IsMulticast() || u.IsUnspecified() ||
			u.IsLinkLocalMulticast() || u.IsInterfaceLocalMulticast()) && reason == "" {
			t.Fatalf("%v is internal but allowed", a)
		}
	})
}

func FuzzConfigVar(f *testing.F) {
	for _, s := range []string{
		`{"type":"string","var":"plain"}`,
		`{"type":"string","var":{"value":"v"},"envFallback":"FUZZ_ENV"}`,
		`{"type":"string","var":"","envFallback":"HOME"}`,
		`{"type":"bool","var":true}`,
		`{"type":"bool","var":{"secretKeyRef":{"namespace":"ns","name":"s","key":"k"}}}`,
		`{"type":"string","var":{"configMapKeyRef":{"namespace":"kube-system","name":"x","key":"y"}}}`,
		`{"type":"int","var":1}`, `{}`, `nul`,
	} {
		f.Add([]byte(s))
	}
	env := fuzzEnv()
	f.Fuzz(func(t *testing.T, req []byte) {
		c := NewCall(context.Background(), env, abi.MethodGet, abi.CapConfigVar)
		c.Machine = fuzzMachine()
		out, err := c.Invoke(abi.ImportConfigVar, req)
		checkResult(t, out, err)
		// Only the allowed variable may ever be read from the environment.
		var r abi.ConfigVarRequest
		if err == nil && string(out) == "from-env" && json.Unmarshal(req, &r) == nil && r.EnvFallback != "FUZZ_ENV" {
			t.Fatalf("environment variable %q read", r.EnvFallback)
		}
	})
}

func FuzzMachineUpdate(f *testing.F) {
	for _, s := range []string{
		`{"addFinalizers":["x"],"removeFinalizers":["f"]}`,
		`{"annotations":{"a":"b","c":null},"labels":{"a":null}}`,
		`{"providerID":"fake://1"}`,
		`{"mergePatch":{"metadata":{"name":"other"}}}`,
		`{"mergePatch":{"spec":{"providerSpec":{"value":{"x":1}}}}}`,
		`{"mergePatch":[1]}`, `{"mergePatch":{"kind":"Pod"}}`, `{}`,
	} {
		f.Add([]byte(s))
	}
	env := fuzzEnv()
	f.Fuzz(func(t *testing.T, req []byte) {
		c := NewCall(context.Background(), env, abi.MethodCreate, abi.CapMachineUpdate)
		c.Machine = fuzzMachine()
		c.Data = &Data{Update: func(cur *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
			m := cur.DeepCopy()
			modify(m)
			return m, nil
		}}
		out, err := c.Invoke(abi.ImportMachineUpdate, req)
		checkResult(t, out, err)
		if err == nil && (c.Machine.Name != "m" || c.Machine.Namespace != "ns" || c.Machine.UID != "u") {
			t.Fatalf("identity changed by %s: %s/%s %s", req, c.Machine.Namespace, c.Machine.Name, c.Machine.UID)
		}
	})
}

func FuzzPVList(f *testing.F) {
	for _, s := range []string{`{}`, `{"labelSelector":"a=b"}`, `{"labelSelector":"a in (x,y),!b"}`, `{"labelSelector":"=="}`, ``} {
		f.Add([]byte(s))
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = idx.Add(&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", Labels: map[string]string{"a": "b"}}})
	lister := listerscorev1.NewPersistentVolumeLister(idx)
	env := fuzzEnv()
	f.Fuzz(func(t *testing.T, req []byte) {
		c := NewCall(context.Background(), env, abi.MethodCreate, abi.CapPVList)
		c.Machine = fuzzMachine()
		c.Data = &Data{ListPersistentVolumes: provider.FromLister(lister)}
		out, err := c.Invoke(abi.ImportPVList, req)
		checkResult(t, out, err)
		_ = labels.Everything()
	})
}

func FuzzLog(f *testing.F) {
	f.Add(int32(0), []byte("hello"), []byte(`{"a":1,"b":{"c":[1,2]}}`))
	f.Add(int32(8), []byte("\xff\xfe"), []byte(`not json`))
	f.Add(int32(-8), []byte(""), []byte(`{"":null}`))
	env := fuzzEnv()
	f.Fuzz(func(t *testing.T, level int32, msg, attrs []byte) {
		c := NewCall(context.Background(), env, abi.MethodGet, abi.CapLog)
		if err := c.Log(level, msg, attrs); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzInput(f *testing.F) {
	f.Add(int32(1), uint8(abi.MethodGet))
	f.Add(int32(99), uint8(abi.MethodCreate))
	f.Add(int32(-1), uint8(0))
	env := fuzzEnv()
	f.Fuzz(func(t *testing.T, part int32, method uint8) {
		c := NewCall(context.Background(), env, abi.Method(method), 0)
		c.Machine = fuzzMachine()
		b, err := c.Input(abi.Input(part))
		checkResult(t, b, err)
		if err == nil && !abi.Method(method).Valid() {
			t.Fatalf("input %d served to invalid method %d", part, method)
		}
	})
}
