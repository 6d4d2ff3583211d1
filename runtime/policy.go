package runtime

import (
	"fmt"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/hostfuncs"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
)

// Policy is what the host allows one provider. The zero value is the safe
// default: no outbound hosts, no environment, default limits, and every
// capability the module declares.
//
// The JSON/YAML form is the "<name>.yaml" file next to a provider in a
// provider directory.
type Policy struct {
	// AllowedHosts lists the hosts http_do may reach: "api.hetzner.cloud"
	// (at the scheme's default port only), "*.example.com",
	// "127.0.0.1:8080", "127.0.0.1:*" (any port).
	AllowedHosts []string `json:"allowedHosts,omitempty"`
	// AllowInsecureHTTP permits plain http:// (for simulators on loopback).
	AllowInsecureHTTP bool `json:"allowInsecureHTTP,omitempty"`
	// MaxHTTPResponseBytes caps an HTTP response body
	// (DefaultMaxHTTPResponseBytes).
	MaxHTTPResponseBytes int64 `json:"maxHTTPResponseBytes,omitempty"`
	// AllowInternalHosts lists hosts (patterns as in AllowedHosts) that
	// http_do may reach at loopback, private, link-local (including the
	// 169.254.169.254 metadata service) or other non-public addresses;
	// every other host is refused such addresses at connect time. An
	// AllowedHosts entry that is an IP literal allows that address.
	AllowInternalHosts []string `json:"allowInternalHosts,omitempty"`
	// HostAliases sends http_do requests for a host ("api.hetzner.cloud",
	// or "host:port") to a loopback URL ("http://127.0.0.1:8080"): an
	// unmodified provider and Machine manifest run against a simulator.
	// The guest's URL is checked against AllowedHosts as written; only the
	// destination changes. A target that is not a loopback address with a
	// port makes the policy invalid (the load fails). Logged at load.
	HostAliases map[string]string `json:"hostAliases,omitempty"`
	// MaxHTTPRequestBytes caps an http_do request body
	// (DefaultMaxHTTPRequestBytes).
	MaxHTTPRequestBytes int64 `json:"maxHTTPRequestBytes,omitempty"`
	// MaxHTTPRedirects caps the redirects one request follows
	// (DefaultMaxHTTPRedirects).
	MaxHTTPRedirects int `json:"maxHTTPRedirects,omitempty"`
	// HTTPTimeout bounds one http_do request within the call
	// (DefaultHTTPTimeout).
	HTTPTimeout Duration `json:"httpTimeout,omitempty"`
	// HTTPRequestsPerSecond paces the provider's http_do requests, over
	// every instance and version of the provider (a token bucket of
	// HTTPBurst requests, default 1): a cloud's API rate limit kept by
	// the host rather than hit. Paced, a 429 (or a 503 with Retry-After,
	// or RateLimit-Remaining 0 with RateLimit-Reset) also holds every
	// request of the provider for as long as the cloud asked (at most 10
	// minutes). A request that could not be sent before its call's
	// deadline fails at once. 0: unpaced, and the cloud's answers are the
	// provider's own business.
	HTTPRequestsPerSecond float64 `json:"httpRequestsPerSecond,omitempty"`
	// HTTPBurst is the burst of HTTPRequestsPerSecond (default 1).
	HTTPBurst int `json:"httpBurst,omitempty"`
	// AllowedEnv lists host environment variables config_var may fall back
	// to (e.g. HZ_TOKEN).
	AllowedEnv []string `json:"allowedEnv,omitempty"`
	// AllowedSecretNamespaces lists the namespaces, besides the Machine's
	// own, whose Secrets and ConfigMaps config_var may read when the
	// Machine's provider spec references them ("*": any namespace). Empty
	// means the Machine's namespace only; in AddDefaults, Validate and
	// GetCloudConfig, which get a spec and no Machine, the Machine's
	// namespace is known only if the caller passed it with
	// provider.WithMachineNamespace.
	AllowedSecretNamespaces []string `json:"allowedSecretNamespaces,omitempty"`
	// Capabilities, when set, is the list of capabilities granted ("http",
	// "config_var", ...); a declared capability not listed is refused. When
	// nil, every declared built-in capability is granted. A custom host
	// function's capability ("ipam.example.com/allocate", package
	// hostfuncs) is granted only when listed here: a module importing a
	// function whose capability is not listed is refused at load.
	Capabilities []string `json:"capabilities,omitempty"`
	// MemoryLimitMiB caps each instance's linear memory (default 256).
	MemoryLimitMiB uint32 `json:"memoryLimitMiB,omitempty"`
	// PoolSize caps concurrent instances, hence concurrent calls (default 4).
	PoolSize int `json:"poolSize,omitempty"`
	// Prewarm is how many instances are created at load time and kept idle
	// (default 1; 0 with an IdleTimeout). Loading always starts one instance,
	// which proves the module instantiates and tells its ABI version and
	// capabilities; with Prewarm 0 it is closed once it has.
	Prewarm int `json:"prewarm,omitempty"`
	// IdleTimeout closes an instance that has been idle that long, down to
	// none: a provider called rarely holds no instance (no memory) between
	// calls, and the next call starts one, paying the instantiation (for a
	// Go guest a few milliseconds; see docs/BENCHMARKS.md). With an
	// IdleTimeout, Prewarm defaults to 0: loading leaves no instance at all
	// until the first call. 0 (the default) keeps idle instances until the
	// provider is closed (or MaxCallsPerInstance recycles them). An instance
	// serving a call is never closed for idleness.
	IdleTimeout Duration `json:"idleTimeout,omitempty"`
	// CallTimeout bounds a call that has no earlier deadline (default 2m).
	CallTimeout Duration `json:"callTimeout,omitempty"`
	// LoadTimeout bounds loading the module when the caller's context has
	// no earlier deadline: compiling it, and starting each instance
	// (instantiation, _initialize and the ABI exports) — at load and
	// whenever the pool starts a new instance (default 2m).
	LoadTimeout Duration `json:"loadTimeout,omitempty"`
	// MaxTableEntries caps each table of an instance (default 262144, 2 MiB
	// of pointers; the largest real guest's table has 13,854 entries):
	// a table is host memory (a pointer per entry) that the linear memory
	// limit does not count.
	MaxTableEntries uint32 `json:"maxTableEntries,omitempty"`
	// MaxCallsPerInstance recycles an instance after that many calls, which
	// bounds a guest's memory growth (default 10000; -1 never).
	MaxCallsPerInstance int `json:"maxCallsPerInstance,omitempty"`
	// SHA256 pins the module: loading fails unless the file's digest
	// matches (hex).
	SHA256 string `json:"sha256,omitempty"`
}

// Policy defaults.
const (
	DefaultMemoryLimitMiB      = 256
	DefaultPoolSize            = 4
	DefaultCallTimeout         = 2 * time.Minute
	DefaultMaxCallsPerInstance = 10000
	DefaultLoadTimeout         = 2 * time.Minute
	DefaultMaxTableEntries     = 262144

	// The HTTP defaults are hostmodule', which applies them (once, when a
	// provider version is loaded): Policy() leaves these fields at 0.
	DefaultMaxHTTPResponseBytes = hostmodule.DefaultMaxResponseBytes
	DefaultMaxHTTPRequestBytes  = hostmodule.DefaultMaxRequestBodyBytes
	DefaultMaxHTTPRedirects     = hostmodule.DefaultMaxRedirects
	DefaultHTTPTimeout          = hostmodule.DefaultTimeout
	// DefaultMaxHTTPHeaders and DefaultMaxHTTPHeaderBytes have no Policy
	// field: they cap the request header fields, and the request and the
	// response headers' bytes, of every provider.
	DefaultMaxHTTPHeaders     = hostmodule.DefaultMaxHeaders
	DefaultMaxHTTPHeaderBytes = hostmodule.DefaultMaxHeaderBytes
	// MaxHTTPBurst is the largest HTTPBurst a policy may set.
	MaxHTTPBurst = 10000
)

func (p Policy) withDefaults() Policy {
	if p.MemoryLimitMiB == 0 {
		p.MemoryLimitMiB = DefaultMemoryLimitMiB
	}
	if p.PoolSize <= 0 {
		p.PoolSize = DefaultPoolSize
	}
	switch {
	case p.Prewarm < 0:
		p.Prewarm = 0
	case p.Prewarm == 0 && p.IdleTimeout <= 0:
		// Without an idle timeout an unset Prewarm keeps the instance that
		// loading starts, as before IdleTimeout existed.
		p.Prewarm = 1
	}
	if p.IdleTimeout < 0 {
		p.IdleTimeout = 0
	}
	if p.Prewarm > p.PoolSize {
		p.Prewarm = p.PoolSize
	}
	if p.CallTimeout <= 0 {
		p.CallTimeout = Duration(DefaultCallTimeout)
	}
	if p.LoadTimeout <= 0 {
		p.LoadTimeout = Duration(DefaultLoadTimeout)
	}
	if p.MaxTableEntries == 0 {
		p.MaxTableEntries = DefaultMaxTableEntries
	}
	if p.MaxCallsPerInstance == 0 {
		p.MaxCallsPerInstance = DefaultMaxCallsPerInstance
	}
	return p
}

// grant returns the capabilities granted to a module declaring declared.
//
// Protocol bits (abi.ProtocolCapabilities: how the module speaks the ABI,
// not what it may use) are always granted.
func (p Policy) grant(declared abi.Capability) (abi.Capability, error) {
	if p.Capabilities == nil {
		return declared, nil
	}
	var allowed abi.Capability
	for _, name := range p.Capabilities {
		c, ok := abi.ParseCapability(name)
		switch {
		case ok:
			allowed |= c
		case hostfuncs.CheckCapabilityName(name) == nil:
			// A custom function's: granted by grantCustom.
		default:
			return 0, fmt.Errorf("policy names unknown capability %q", name)
		}
	}
	return declared & (allowed | abi.ProtocolCapabilities), nil
}

// Duration is a time.Duration that reads and writes as a string ("30s").
type Duration time.Duration

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Duration(d).String() + `"`), nil
}

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("duration must be a string like \"30s\", got %s", b)
	}
	v, err := time.ParseDuration(string(b[1 : len(b)-1]))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
