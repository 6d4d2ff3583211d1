// Package testregistry starts a real OCI registry for tests: the
// distribution project's own registry handler with in-memory storage, on
// 127.0.0.1, optionally with basic auth and TLS from a CA made for the
// test. It counts the requests it serves, so a test can assert that a
// pull made none.
package testregistry

import (
	"context"
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
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"

	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
)

// Registry is a real registry (distribution's own handler and
// in-memory storage) on 127.0.0.1, with a count of the requests it got.
type Registry struct {
	Server *httptest.Server
	// Host is 127.0.0.1:port, what references start with.
	Host string
	// Requests counts the requests served.
	Requests atomic.Int64
	// CAPool and CAFile (PEM) trust the registry's certificate (TLS only).
	CAPool *x509.CertPool
	CAFile string
}

// Options choose auth and TLS.
type Options struct {
	User, Password string // basic auth when set
	TLS            bool
}

// distribution logs every request, and every 404 (an ordinary answer to
// a HEAD) as an error.
func init() { logrus.SetOutput(io.Discard) }

// Start starts a registry, closed when t ends.
func Start(t testing.TB, o Options) *Registry {
	t.Helper()
	cfg := &configuration.Configuration{
		Storage: configuration.Storage{
			"inmemory":    configuration.Parameters{},
			"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
		},
	}
	cfg.HTTP.Secret = "test-secret"
	cfg.Log.AccessLog.Disabled = true
	if o.User != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(o.Password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "htpasswd")
		if err := os.WriteFile(file, []byte(o.User+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg.Auth = configuration.Auth{"htpasswd": configuration.Parameters{"realm": "test", "path": file}}
	}
	app := handlers.NewApp(context.Background(), cfg)
	reg := &Registry{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg.Requests.Add(1)
		app.ServeHTTP(w, r)
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
