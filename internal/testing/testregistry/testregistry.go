// Package testregistry starts a real OCI registry for tests: the
// distribution project's own registry handler with in-memory storage, on
// 127.0.0.1, optionally with basic auth and TLS from a CA made for the
// test. It counts the requests it serves, so a test can assert that a
// pull made none.
//
// The registry runs in a process of its own (registryd, built once per
// test binary into the test cache), behind a reverse proxy in the test's
// process that terminates TLS and counts requests: a test binary built
// with -race then neither links nor race-compiles the distribution server.
// Closing Server is an outage: the proxy stops answering.
package testregistry

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/internal/testing/testguest"
	"golang.org/x/crypto/bcrypt"
)

// Registry is a real registry (distribution's own handler and
// in-memory storage) on 127.0.0.1, with a count of the requests it got.
type Registry struct {
	Server *httptest.Server
	// Host is 127.0.0.1:port, what references start with.
	Host string
	// mu guards served, every request served as "METHOD path".
	mu     sync.Mutex
	served []string
	down   bool
	// CAPool and CAFile (PEM) trust the registry's certificate (TLS only).
	CAPool *x509.CertPool
	CAFile string
}

// Options choose auth and TLS.
type Options struct {
	User, Password string // basic auth when set
	TLS            bool
}

// Start starts a registry, closed when t ends.
func Start(t testing.TB, o Options) *Registry {
	t.Helper()
	var args []string
	if o.User != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(o.Password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "htpasswd")
		if err := os.WriteFile(file, []byte(o.User+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-htpasswd", file)
	}
	backend := startBackend(t, args)
	proxy := &httputil.ReverseProxy{
		Rewrite:  func(r *httputil.ProxyRequest) { r.SetURL(backend); r.Out.Host = r.In.Host },
		ErrorLog: log.New(io.Discard, "", 0),
	}
	reg := &Registry{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg.mu.Lock()
		down := reg.down
		if !down {
			reg.served = append(reg.served, r.Method+" "+r.URL.Path)
		}
		reg.mu.Unlock()
		if down {
			// Unreachable: the connection drops without an answer.
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
		proxy.ServeHTTP(w, r)
	})
	reg.Server = httptest.NewUnstartedServer(h)
	reg.Server.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes the tests make fail
	if o.TLS {
		cert, pool, caPEM := selfSignedCA(t)
		reg.Server.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		reg.CAPool = pool
		reg.CAFile = filepath.Join(t.TempDir(), "ca.pem")
		os.WriteFile(reg.CAFile, caPEM, 0o644)
		reg.Server.StartTLS()
	} else {
		reg.Server.Start()
	}
	t.Cleanup(reg.Server.Close)
	reg.Host = strings.TrimPrefix(strings.TrimPrefix(reg.Server.URL, "http://"), "https://")
	return reg
}

// SetDown starts (true) or ends (false) an outage the registry comes
// back from, with its content: while down, every connection is dropped
// without an answer. (Closing Server is an outage for good.)
func (r *Registry) SetDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
	if down {
		r.Server.CloseClientConnections() // no request rides an open one
	}
}

// Requests counts the requests served.
func (r *Registry) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.served)
}

// Served returns the requests served from the n-th on (n: an earlier
// Requests()), as "METHOD path": a test that shares the registry with a
// background retry can tell its own requests from the retry's.
func (r *Registry) Served(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n >= len(r.served) {
		return nil
	}
	return append([]string(nil), r.served[n:]...)
}

// startBackend runs registryd with args and returns its URL; the process
// ends with t (and with this process: its standard input closes).
func startBackend(t testing.TB, args []string) *url.URL {
	t.Helper()
	cmd := exec.Command(registryd(t), args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the test registry: %v", err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("the test registry did not start: %q, %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	if _, _, err := net.SplitHostPort(addr); err != nil {
		t.Fatalf("the test registry printed %q", line)
	}
	return &url.URL{Scheme: "http", Host: addr}
}

var (
	buildMu sync.Mutex
	built   string
)

// registryd builds the registry program once per test binary, without
// the race detector whatever the test binary was built with.
func registryd(t testing.TB) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if built != "" {
		return built
	}
	// Built beside the guests, then renamed into place: test binaries
	// building it at once each rename a complete program over the other's.
	dir := filepath.Join(testguest.CacheDir(t), "registryd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.CreateTemp(dir, ".registryd-*")
	if err != nil {
		t.Fatal(err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	// registryd is a module of its own (distribution stays out of the
	// embedder module's go.mod); make modules downloads its dependencies.
	cmd := exec.Command("go", "build", "-o", tmp.Name(), ".")
	cmd.Dir = filepath.Join(testguest.Root(), "internal", "testing", "testregistry", "registryd")
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the test registry: %v\n%s", err, b)
	}
	out := filepath.Join(dir, "registryd")
	if err := os.Rename(tmp.Name(), out); err != nil {
		t.Fatal(err)
	}
	built = out
	return out
}

// selfSignedCA makes a CA and a server certificate for 127.0.0.1 it
// signed; it returns the server's certificate, a pool of the CA alone and
// the CA in PEM.
func selfSignedCA(t testing.TB) (tls.Certificate, *x509.CertPool, []byte) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wasmprov test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	caPEM := fmt.Appendf(nil, "-----BEGIN CERTIFICATE-----\n%s\n-----END CERTIFICATE-----\n", base64.StdEncoding.EncodeToString(caDER))
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool, caPEM
}

// DockerConfig writes a Docker config.json holding user:password for host.
func DockerConfig(t testing.TB, host, user, password string) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"auths": map[string]any{
		host: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password))},
	}})
	file := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
