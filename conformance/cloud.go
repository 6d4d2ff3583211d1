package conformance

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/wasmprov/wasmprov/cassette"
	"github.com/wasmprov/wasmprov/internal/hostalias"
	"github.com/wasmprov/wasmprov/runtime"
)

// Where the provider's requests go: a cloud or simulator (through a host
// alias, or the ${CLOUD_URL} a spec names), a recorder in front of one, or
// a cassette replayed offline; and the policy that lets them.

// cloud says where the cloud is and how requests get there: the URL
// ${CLOUD_URL} stands for ("" without a cloud), the transport the
// provider's requests take (nil: the policy's own) and, when recording,
// the recorder to save. It sets rep.Cloud, and e.replay on a replay.
func (e *env) cloud(rep *Report) (string, http.RoundTripper, *cassette.Recorder, error) {
	cfg := e.cfg
	// Checked here as the runtime checks them (loopback targets only),
	// whether the runtime, the recorder or nobody (a replay) follows them.
	aliases, err := hostalias.Parse(cfg.Policy.HostAliases)
	if err != nil {
		return "", nil, nil, err
	}
	cloudURL := ""
	var transport http.RoundTripper // nil: the policy's own
	var recorder *cassette.Recorder
	switch {
	case cfg.Cassette != "" && cfg.Record:
		// The recorder does while recording what the runtime's aliases do
		// live: the cassette holds the URLs the provider asked for, and
		// replays without them.
		recorder = &cassette.Recorder{Aliases: aliases, Redact: cfg.Redact}
		from := aliases.List()
		if cfg.CloudURL != "" {
			target, err := url.Parse(cfg.CloudURL)
			if err != nil {
				return "", nil, nil, fmt.Errorf("cloud URL: %w", err)
			}
			recorder.Target = target
			recorder.Canonical, _ = url.Parse(CanonicalCloudURL)
			cloudURL = CanonicalCloudURL
			from = append([]string{cfg.CloudURL}, from...)
		}
		transport = recorder // forwards to the simulator the caller named
		rep.Cloud = "recording " + strings.Join(from, ", ") + " into " + cfg.Cassette
	case cfg.Cassette != "":
		c, err := cassette.Load(cfg.Cassette)
		if err != nil {
			return "", nil, nil, err
		}
		e.replay = cassette.NewReplayer(c, cfg.Redact, cfg.Ignore...)
		transport = e.replay // answers from the cassette, dials nothing
		cloudURL = CanonicalCloudURL
		rep.Cloud = "replaying " + cfg.Cassette
	case cfg.CloudURL != "" || len(aliases) > 0:
		cloudURL = cfg.CloudURL
		rep.Cloud = strings.Join(append(nonEmpty(cfg.CloudURL), aliases.List()...), ", ")
	default:
		rep.Cloud = "none"
	}
	return cloudURL, transport, recorder, nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// runPolicy is cfg.Policy with the cloud's host allowed and the pool and
// call timeout the run needs.
//
// A host alias's host is allowed too: the provider names it as written.
// With a cassette the aliases leave the policy: the recorder sends the
// aliased requests on, and replay answers them without a network.
func runPolicy(cfg Config, cloudURL string) (runtime.Policy, error) {
	policy := cfg.Policy
	policy.AllowedHosts = slices.Clone(policy.AllowedHosts)
	for _, from := range slices.Sorted(maps.Keys(cfg.Policy.HostAliases)) {
		policy.AllowedHosts = append(policy.AllowedHosts, strings.ToLower(from))
	}
	if cfg.Cassette != "" {
		policy.HostAliases = nil
	}
	if cloudURL != "" {
		u, err := url.Parse(cloudURL)
		if err != nil {
			return runtime.Policy{}, fmt.Errorf("cloud URL: %w", err)
		}
		policy.AllowedHosts = append(policy.AllowedHosts, u.Host)
		if u.Scheme == "http" {
			policy.AllowInsecureHTTP = true
		}
	}
	if policy.PoolSize < cfg.Concurrency {
		policy.PoolSize = cfg.Concurrency
	}
	if policy.CallTimeout == 0 {
		policy.CallTimeout = runtime.Duration(cfg.CallTimeout)
	}
	return policy, nil
}
