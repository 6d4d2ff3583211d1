package hostfuncs

import (
	"crypto/tls"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"k8s.io/client-go/kubernetes"
)

// Env is what the host functions of one provider may use and must obey:
// the provider's name, logger, policy and the host resources behind the
// capabilities. It is shared by every call of the provider and is read-only
// once the provider is loaded.
type Env struct {
	// Provider names the provider in log lines and errors.
	Provider string
	// Logger receives guest logs and host diagnostics; nil means
	// slog.Default(). It should already carry the provider's name.
	Logger *slog.Logger

	HTTP      HTTPPolicy
	ConfigVar ConfigVarSource
	Limits    Limits
}

// Limits bound what a guest can make the host hold. Zero fields take the
// defaults of DefaultLimits.
type Limits struct {
	// MaxResultBytes caps a method's output document.
	MaxResultBytes int64
	// MaxMessageBytes caps an error message or log message; longer ones are
	// truncated, not refused, so the reason of a failure is never lost.
	MaxMessageBytes int64
	// MaxRequestBytes caps a request document passed to a host function.
	MaxRequestBytes int64
	// MaxLogBytesPerCall and MaxLogRecordsPerCall cap what one call may
	// log through the log host function; past either, log answers
	// TOO_LARGE and the host warns once. The host's log pipeline is shared
	// by every provider: one must not flood it.
	MaxLogBytesPerCall   int64
	MaxLogRecordsPerCall int64
	// MaxBytesPerCall caps the bytes a guest hands the host in one call:
	// results, error reports, log records and host function requests
	// together. Past it those functions answer TOO_LARGE.
	MaxBytesPerCall int64
	// MaxHTTPRequestsPerCall, MaxMachineUpdatesPerCall,
	// MaxConfigVarsPerCall and MaxPVListsPerCall cap how often one call
	// may use http_do, machine_update, config_var and pv_list; past a cap
	// the function answers TOO_LARGE and the host warns once. Each is work
	// for another system (the cloud's API, the Kubernetes API server and
	// its caches) that a guest looping within its deadline would flood.
	MaxHTTPRequestsPerCall   int64
	MaxMachineUpdatesPerCall int64
	MaxConfigVarsPerCall     int64
	MaxPVListsPerCall        int64
}

// DefaultLimits are the limits used for zero fields of Limits.
var DefaultLimits = Limits{
	MaxResultBytes:  4 << 20,
	MaxMessageBytes: 64 << 10,
	MaxRequestBytes: 8 << 20,
	MaxBytesPerCall: 64 << 20,

	MaxLogBytesPerCall:   1 << 20,
	MaxLogRecordsPerCall: 1000,

	// A provider polling an action every 500 ms for a 5-minute Delete
	// makes 600 requests; hcloud-go's Create makes under 20.
	MaxHTTPRequestsPerCall: 2000,
	// The SDK's Create and Delete make 1-3 updates.
	MaxMachineUpdatesPerCall: 64,
	// A spec has a handful of config vars; each reads once.
	MaxConfigVarsPerCall: 256,
	MaxPVListsPerCall:    16,
}

func (env *Env) limits() Limits {
	l := env.Limits
	for _, f := range []struct {
		v *int64
		d int64
	}{
		{&l.MaxResultBytes, DefaultLimits.MaxResultBytes},
		{&l.MaxMessageBytes, DefaultLimits.MaxMessageBytes},
		{&l.MaxRequestBytes, DefaultLimits.MaxRequestBytes},
		{&l.MaxLogBytesPerCall, DefaultLimits.MaxLogBytesPerCall},
		{&l.MaxLogRecordsPerCall, DefaultLimits.MaxLogRecordsPerCall},
		{&l.MaxBytesPerCall, DefaultLimits.MaxBytesPerCall},
		{&l.MaxHTTPRequestsPerCall, DefaultLimits.MaxHTTPRequestsPerCall},
		{&l.MaxMachineUpdatesPerCall, DefaultLimits.MaxMachineUpdatesPerCall},
		{&l.MaxConfigVarsPerCall, DefaultLimits.MaxConfigVarsPerCall},
		{&l.MaxPVListsPerCall, DefaultLimits.MaxPVListsPerCall},
	} {
		if *f.v <= 0 {
			*f.v = f.d
		}
	}
	return l
}

// perCall returns the cap on uses of data host function fn in one call.
func (l Limits) perCall(fn string) int64 {
	switch fn {
	case abi.ImportHTTP:
		return l.MaxHTTPRequestsPerCall
	case abi.ImportMachineUpdate:
		return l.MaxMachineUpdatesPerCall
	case abi.ImportConfigVar:
		return l.MaxConfigVarsPerCall
	case abi.ImportPVList:
		return l.MaxPVListsPerCall
	}
	return 0
}

func (env *Env) logger() *slog.Logger {
	if env.Logger != nil {
		return env.Logger
	}
	return slog.Default()
}

// HTTPPolicy governs http_do.
type HTTPPolicy struct {
	// AllowedHosts lists the hosts a guest may reach: "api.hetzner.cloud"
	// (the scheme's default port), "*.example.com" (any subdomain, not the
	// apex), "127.0.0.1:8080" (that port only), "127.0.0.1:*" (any port).
	// Empty allows nothing.
	AllowedHosts []string
	// AllowInsecure permits plain http:// URLs. Off by default: credentials
	// travel in provider requests.
	AllowInsecure bool
	// MaxResponseBytes caps a response body (default 16 MiB).
	MaxResponseBytes int64
	// MaxRedirects caps redirects followed (default 5); each target is
	// checked against the policy again.
	MaxRedirects int
	// Timeout bounds one request, within the call's own deadline
	// (default 60s).
	Timeout time.Duration
	// WrapTransport, when set, wraps the policy's hardened transport (its
	// argument) with the round tripper that sends the requests, e.g. a
	// record/replay transport for tests. Every request still passes the
	// policy first (scheme, allow-list, sizes, headers, redirects, time);
	// the connect-time address checks live in the hardened transport, so a
	// wrapper that sends requests without it (a replayer answering from a
	// file, a recorder forwarding to a simulator) is trusted to reach only
	// what it should.
	WrapTransport func(http.RoundTripper) http.RoundTripper

	// AllowInternalHosts lists hosts (patterns as in AllowedHosts) that may
	// resolve to loopback, private, link-local (169.254.169.254),
	// multicast, unspecified or other non-public addresses. Any other host
	// is refused such addresses at connect time, on every redirect too.
	// An AllowedHosts entry that is itself an IP literal ("127.0.0.1:8080")
	// allows that address.
	AllowInternalHosts []string
	// MaxRequestBodyBytes caps a request body (default 4 MiB).
	MaxRequestBodyBytes int64
	// MaxHeaders caps the number of request header fields (default 64).
	MaxHeaders int
	// MaxHeaderBytes caps the total size of the request headers and of the
	// response headers (default 64 KiB).
	MaxHeaderBytes int
	// Resolver resolves host names for the address check; nil means
	// net.DefaultResolver.
	Resolver Resolver
	// TLSConfig configures TLS, e.g. a private CA; nil means the system's
	// roots.
	TLSConfig *tls.Config

	hardened *http.Transport // built on first use, under transportMu
}

// ConfigVarSource is where config_var resolves references.
type ConfigVarSource struct {
	// Client reads Secrets and ConfigMaps. Nil refuses references.
	Client kubernetes.Interface
	// AllowedEnv lists the host environment variables a guest may use as
	// fallbacks (e.g. "HZ_TOKEN"). Empty allows none: the host's environment
	// holds the controller's own credentials.
	AllowedEnv []string
	// AllowedNamespaces lists the namespaces, besides the Machine's own,
	// whose Secrets and ConfigMaps a guest may read when its Machine
	// references them; "*" allows every namespace. Empty allows only the
	// Machine's namespace: a reference to a Secret in kube-system from a
	// Machine elsewhere is refused.
	AllowedNamespaces []string
	// LookupEnv reads the environment; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

func (s ConfigVarSource) lookupEnv(name string) (string, bool) {
	for _, a := range s.AllowedEnv {
		if a == name {
			if s.LookupEnv != nil {
				return s.LookupEnv(name)
			}
			return os.LookupEnv(name)
		}
	}
	return "", false
}
