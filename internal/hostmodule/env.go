package hostmodule

import (
	"log/slog"
	"os"
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

	// HTTP is the provider's outbound HTTP (NewHTTP); nil allows no host.
	HTTP      *HTTP
	ConfigVar ConfigVarSource
	Limits    Limits
	// CustomGranted holds the capabilities of custom host functions
	// (package hostfuncs) the provider's policy grants; a custom function
	// whose capability is not in it answers NOT_DECLARED.
	CustomGranted map[string]bool
}

// Close releases what the Env holds beyond a call: the idle connections
// of its HTTP. A nil Env does nothing.
func (env *Env) Close() {
	if env != nil {
		env.HTTP.Close()
	}
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

func (env *Env) logger() *slog.Logger {
	if env.Logger != nil {
		return env.Logger
	}
	return slog.Default()
}

// ConfigVarSource is where config_var resolves references.
type ConfigVarSource struct {
	// Client reads Secrets and ConfigMaps. Nil refuses references.
	Client Kube
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
