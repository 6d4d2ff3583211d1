package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// PolicyFileSuffix is the extension of the policy file next to a provider
// module in a provider directory: "<name>.yaml" goes with "<name>.wasm".
const PolicyFileSuffix = ".yaml"

// ParsePolicy reads a policy file's content: Policy in YAML (or JSON) form.
// It is strict: an unknown or misspelt field is an error, so a typo cannot
// silently widen or drop a restriction.
func ParsePolicy(b []byte) (Policy, error) {
	var p Policy
	// YAML to JSON refusing duplicate keys, then JSON into Policy matching
	// field names case-sensitively (encoding/json would take "poolsize"
	// for "poolSize") and refusing unknown fields.
	j, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		return Policy{}, fmt.Errorf("policy: %w", err)
	}
	if len(bytes.TrimSpace(j)) == 0 || string(bytes.TrimSpace(j)) == "null" {
		return Policy{}, nil
	}
	strict, err := sigsjson.UnmarshalStrict(j, &p, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return Policy{}, fmt.Errorf("policy: %w", err)
	}
	if err := errors.Join(strict...); err != nil {
		return Policy{}, fmt.Errorf("policy: %w", err)
	}
	if _, err := p.grant(0); err != nil {
		return Policy{}, fmt.Errorf("policy: %w", err)
	}
	if p.PoolSize < 0 || p.Prewarm < 0 || p.MaxHTTPResponseBytes < 0 || p.CallTimeout < 0 || p.LoadTimeout < 0 || p.IdleTimeout < 0 ||
		p.HTTPRequestsPerSecond < 0 || p.HTTPBurst < 0 {
		return Policy{}, fmt.Errorf("policy: poolSize, prewarm, maxHTTPResponseBytes, callTimeout, loadTimeout, idleTimeout, httpRequestsPerSecond and httpBurst must not be negative")
	}
	if p.HTTPBurst > MaxHTTPBurst {
		return Policy{}, fmt.Errorf("policy: httpBurst %d is more than %d", p.HTTPBurst, MaxHTTPBurst)
	}
	return p, nil
}

// ReadPolicyFile reads and parses the policy file at path.
func ReadPolicyFile(path string) (Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Policy{}, err
	}
	p, err := ParsePolicy(b)
	if err != nil {
		return Policy{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
