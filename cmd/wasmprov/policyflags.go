package main

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wasmprov/wasmprov/runtime"
)

// policyFlags are the flags that make the policy a provider runs under:
// --policy, a policy file, and --alias, host aliases on top of it. call
// and conformance read them the same way, so one policy file and one
// alias syntax serve both.
type policyFlags struct {
	file    string
	aliases aliasFlag
}

func addPolicyFlags(fs *flag.FlagSet, fileUsage string) *policyFlags {
	f := &policyFlags{aliases: aliasFlag{}}
	fs.StringVar(&f.file, "policy", "", fileUsage)
	fs.Var(f.aliases, "alias", "send the provider's requests for HOST to a simulator on loopback: HOST=http://127.0.0.1:PORT "+
		"(repeatable; the policy's hostAliases; HOST is added to its allowed hosts)")
	return f
}

// policy reads the policy file (none: the zero Policy) and adds the
// aliases. set reports whether either flag was given.
func (f *policyFlags) policy() (p runtime.Policy, set bool, err error) {
	if f.file != "" {
		if p, err = readPolicyFile(f.file); err != nil {
			return runtime.Policy{}, false, err
		}
	}
	if len(f.aliases) == 0 {
		return p, f.file != "", nil
	}
	p.HostAliases = maps.Clone(p.HostAliases)
	if p.HostAliases == nil {
		p.HostAliases = map[string]string{}
	}
	for _, host := range slices.Sorted(maps.Keys(f.aliases)) {
		p.HostAliases[host] = f.aliases[host]
		if !slices.Contains(p.AllowedHosts, host) {
			p.AllowedHosts = append(slices.Clone(p.AllowedHosts), host)
		}
	}
	return p, true, nil
}

// readPolicyFile reads a policy file: YAML or JSON, strictly, as call,
// serve and the registry read one (runtime.ParsePolicy), so that one file
// serves every command and a misspelt field is an error rather than a
// restriction silently dropped.
func readPolicyFile(path string) (runtime.Policy, error) {
	p, err := runtime.ReadPolicyFile(path)
	if err != nil {
		return runtime.Policy{}, fmt.Errorf("--policy: %w", err)
	}
	return p, nil
}

// aliasFlag collects --alias HOST=URL. The runtime checks the target
// (loopback, with a port) when the policy is used.
type aliasFlag map[string]string

func (a aliasFlag) String() string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		out = append(out, k+"="+a[k])
	}
	return strings.Join(out, ",")
}

func (a aliasFlag) Set(v string) error {
	host, target, ok := strings.Cut(v, "=")
	if !ok || host == "" || target == "" {
		return fmt.Errorf("want HOST=URL, such as api.digitalocean.com=http://127.0.0.1:8080")
	}
	host = strings.ToLower(host)
	if prev, dup := a[host]; dup && prev != target {
		return fmt.Errorf("%s is aliased twice (%s and %s)", host, prev, target)
	}
	a[host] = target
	return nil
}
