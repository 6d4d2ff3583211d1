// Package oci distributes provider modules through OCI registries, the way
// the Kubernetes WebAssembly world ships modules: one artifact per module
// in the CNCF TAG-Runtime Wasm layout (a config of media type
// application/vnd.wasm.config.v0+json, one layer of media type
// application/wasm), with the module's metadata (package runtime/metadata)
// copied into the manifest's standard annotations.
//
// Pull also reads the older wasm-to-oci / Kubewarden layer media type.
// Every blob goes through a local content store keyed by digest (Store),
// so a module pulled by digest once is never fetched again, and Save and
// Load carry artifacts across an air gap as an OCI image layout tar.
//
// It lives under runtime/ to share the host's atomic cache-file writer.
package oci

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
)

// The media types of a Wasm artifact.
const (
	MediaTypeConfig = "application/vnd.wasm.config.v0+json"
	MediaTypeLayer  = "application/wasm"
	// MediaTypeLayerLegacy is wasm-to-oci's and Kubewarden's layer type,
	// accepted by Pull.
	MediaTypeLayerLegacy = "application/vnd.wasm.content.layer.v1+wasm"
)

// Defaults for Options.
const (
	DefaultMaxBlobSize = 64 << 20
	DefaultTimeout     = 5 * time.Minute
	// maxManifestSize bounds a manifest or config; a Wasm artifact's are
	// a few hundred bytes.
	maxManifestSize = 1 << 20
)

// ErrRefused: the registry's answer, or the artifact, is not what a
// provider module may be pulled from (not a Wasm artifact, too large, a
// digest that does not match, an unsafe connection).
var ErrRefused = errors.New("refused")

// Options configures a Client. The zero value talks HTTPS to registries
// with the credentials of the Docker configuration in its usual place,
// and keeps no store.
type Options struct {
	// Store is the local content store; nil keeps nothing (every pull
	// asks the registry).
	Store *Store
	// DockerConfig is the config.json whose credentials (and credential
	// helpers) are used; "" is $DOCKER_CONFIG/config.json or
	// ~/.docker/config.json, a missing file meaning anonymous access.
	DockerConfig string
	// RootCAs replaces the system's certificate pool, for a registry with
	// a private CA (LoadCAFile reads a PEM bundle).
	RootCAs *x509.CertPool
	// PlainHTTP speaks plain HTTP; refused for any registry but a
	// loopback one (localhost, 127.0.0.0/8, ::1).
	PlainHTTP bool
	// RedirectHosts are the hosts (host or host:port) a registry may
	// redirect to besides itself, e.g. the storage host many public
	// registries send blob downloads to. Others are refused. Content is
	// verified against its digest either way.
	RedirectHosts []string
	// MaxBlobSize bounds the module (the layer); 0 is DefaultMaxBlobSize.
	MaxBlobSize int64
	// Timeout bounds each HTTP request, body included; 0 is
	// DefaultTimeout.
	Timeout time.Duration
	// Logger logs resolutions of tags; nil discards.
	Logger *slog.Logger
	// Transport, if set, is the base transport (tests count requests).
	Transport http.RoundTripper
	// Verify, if set, is asked about every artifact Pull is to return,
	// from the registry or the store; an artifact it refuses is not
	// returned, and, fetched, not stored. runtime/signature's
	// Verifier.Hook checks Sigstore signatures against a policy.
	Verify func(ctx context.Context, c *Client, a *Artifact) error
	// NoReferrersAPI makes Attach and Referrers use the referrers tag
	// schema (sha256-<hex>) even with a registry that has the referrers
	// API.
	NoReferrersAPI bool
}

// Client pushes and pulls Wasm artifacts.
type Client struct {
	opts  Options
	creds credentials.Store
	http  *http.Client
}

// New returns a Client.
func New(opts Options) (*Client, error) {
	if opts.MaxBlobSize <= 0 {
		opts.MaxBlobSize = DefaultMaxBlobSize
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	var (
		creds credentials.Store
		err   error
	)
	if opts.DockerConfig != "" {
		creds, err = credentials.NewStore(opts.DockerConfig, credentials.StoreOptions{})
	} else {
		creds, err = credentials.NewStoreFromDocker(credentials.StoreOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("reading registry credentials: %w", err)
	}
	base := opts.Transport
	if base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if opts.RootCAs != nil {
			t.TLSClientConfig = &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12}
		}
		base = t
	}
	c := &Client{opts: opts, creds: creds}
	c.http = &http.Client{Transport: base, Timeout: opts.Timeout, CheckRedirect: c.checkRedirect}
	return c, nil
}

// LoadCAFile returns the system's certificate pool with the PEM
// certificates of file added.
func LoadCAFile(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", file)
	}
	return pool, nil
}

// checkRedirect follows a redirect only to the registry's own host or to
// one of RedirectHosts.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return fmt.Errorf("%w: more than 5 redirects", ErrRefused)
	}
	from, to := via[0].URL, req.URL
	if to.Host == from.Host || slices.Contains(c.opts.RedirectHosts, to.Host) || slices.Contains(c.opts.RedirectHosts, to.Hostname()) {
		return nil
	}
	return fmt.Errorf("%w: registry %s redirected to another host, %s (allow it with RedirectHosts)", ErrRefused, from.Host, to.Host)
}

// parse parses an OCI reference: registry/repository[:tag][@digest].
func parse(ref string) (registry.Reference, error) {
	r, err := registry.ParseReference(ref)
	if err != nil {
		return r, fmt.Errorf("%q is not an OCI reference (registry/repository:tag or @sha256:…): %w", ref, err)
	}
	return r, nil
}

// isDigest says whether r names a manifest by digest (pinned).
func isDigest(r registry.Reference) bool {
	_, err := r.Digest()
	return err == nil
}

// repository returns the remote repository of r.
func (c *Client) repository(r registry.Reference) (*remote.Repository, error) {
	if c.opts.PlainHTTP && !Loopback(r.Registry) {
		return nil, fmt.Errorf("%w: plain HTTP to %s: only a loopback registry (localhost, 127.0.0.1, [::1]) may be reached without TLS", ErrRefused, r.Registry)
	}
	repo := &remote.Repository{
		Reference: r,
		PlainHTTP: c.opts.PlainHTTP,
		Client: &auth.Client{
			Client:     c.http,
			Credential: credentials.Credential(c.creds),
			Cache:      auth.NewCache(),
		},
		MaxMetadataBytes: maxManifestSize,
	}
	return repo, nil
}

// Loopback says whether host (host or host:port) is a loopback address:
// the only registries PlainHTTP may reach.
func Loopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// refErr names the reference in an error.
func refErr(ref string, err error) error { return fmt.Errorf("%s: %w", ref, err) }

// PinnedDigest returns the manifest digest ref is pinned to, if it names
// one (registry/repository@sha256:…).
func PinnedDigest(ref string) (digest.Digest, bool) {
	r, err := registry.ParseReference(ref)
	if err != nil {
		return "", false
	}
	d, err := r.Digest()
	return d, err == nil
}
