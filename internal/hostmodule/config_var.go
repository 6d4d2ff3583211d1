package hostmodule

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/apis/providerconfig"
	"github.com/wasmprov/wasmprov/provider"
)

// configVar resolves a ConfigVarString or ConfigVarBool the way
// machine-controller's ConfigVarResolver does: a Secret key, else a
// ConfigMap key, else the inline value, else (when empty) a host
// environment variable.
//
// What a guest may read is decided by the host (see referenced): a Secret
// or ConfigMap only if the provider spec the caller passed references that
// exact namespace/name/key and its namespace is allowed, an environment
// variable only if the policy lists it.
func configVar(ctx context.Context, c *Call, req []byte) ([]byte, error) {
	var r abi.ConfigVarRequest
	if err := json.Unmarshal(req, &r); err != nil {
		return nil, errorf(abi.ErrnoInvalid, "config_var request is not valid JSON: %v", err)
	}
	var value string
	var err error
	switch r.Type {
	case abi.ConfigVarTypeString:
		value, err = c.resolveString(ctx, r.Var)
	case abi.ConfigVarTypeBool:
		value, err = c.resolveBool(ctx, r.Var)
	default:
		return nil, errorf(abi.ErrnoInvalid, "config_var type must be %q or %q, not %q", abi.ConfigVarTypeString, abi.ConfigVarTypeBool, r.Type)
	}
	if err != nil {
		return nil, err
	}
	if value == "" && r.EnvFallback != "" {
		if v, ok := c.Env.ConfigVar.lookupEnv(r.EnvFallback); ok {
			value = v
		} else if !contains(c.Env.ConfigVar.AllowedEnv, r.EnvFallback) {
			c.logger().Warn("config_var env fallback denied by policy", "env", r.EnvFallback)
		}
	}
	return []byte(value), nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (c *Call) resolveString(ctx context.Context, raw json.RawMessage) (string, error) {
	var v providerconfig.ConfigVarString
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", errorf(abi.ErrnoInvalid, "invalid ConfigVarString: %v", err)
		}
	}
	if s := v.SecretKeyRef; s.Namespace != "" && s.Name != "" && s.Key != "" {
		return c.secretValue(ctx, s.Namespace, s.Name, s.Key)
	}
	if m := v.ConfigMapKeyRef; m.Namespace != "" && m.Name != "" && m.Key != "" {
		return c.configMapValue(ctx, m.Namespace, m.Name, m.Key)
	}
	return v.Value, nil
}

func (c *Call) resolveBool(ctx context.Context, raw json.RawMessage) (string, error) {
	var v providerconfig.ConfigVarBool
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", errorf(abi.ErrnoInvalid, "invalid ConfigVarBool: %v", err)
		}
	}
	var s string
	var err error
	switch {
	case v.SecretKeyRef.Namespace != "" && v.SecretKeyRef.Name != "" && v.SecretKeyRef.Key != "":
		s, err = c.secretValue(ctx, v.SecretKeyRef.Namespace, v.SecretKeyRef.Name, v.SecretKeyRef.Key)
	case v.ConfigMapKeyRef.Namespace != "" && v.ConfigMapKeyRef.Name != "" && v.ConfigMapKeyRef.Key != "":
		s, err = c.configMapValue(ctx, v.ConfigMapKeyRef.Namespace, v.ConfigMapKeyRef.Name, v.ConfigMapKeyRef.Key)
	case v.Value != nil:
		return strconv.FormatBool(*v.Value), nil
	default:
		return "", nil
	}
	if err != nil {
		return "", err
	}
	b, perr := strconv.ParseBool(s)
	if perr != nil {
		return "", errorf(abi.ErrnoInvalid, "value %q is not a bool: %v", s, perr)
	}
	return strconv.FormatBool(b), nil
}

func (c *Call) secretValue(ctx context.Context, ns, name, key string) (string, error) {
	if err := c.referenced("secretKeyRef", ns, name, key); err != nil {
		return "", err
	}
	o := c.objects()
	if o == nil {
		return "", errorf(abi.ErrnoUnavailable, "no Kubernetes client configured to read secret %s/%s", ns, name)
	}
	v, err := o.SecretKey(ctx, ns, name, key)
	if err != nil {
		return "", keyError("secret", ns, name, err)
	}
	return v, nil
}

func (c *Call) configMapValue(ctx context.Context, ns, name, key string) (string, error) {
	if err := c.referenced("configMapKeyRef", ns, name, key); err != nil {
		return "", err
	}
	o := c.objects()
	if o == nil {
		return "", errorf(abi.ErrnoUnavailable, "no Kubernetes client configured to read configmap %s/%s", ns, name)
	}
	v, err := o.ConfigMapKey(ctx, ns, name, key)
	if err != nil {
		return "", keyError("configmap", ns, name, err)
	}
	return v, nil
}

// referenced checks that a Secret or ConfigMap key may be read in this
// call. Two rules, both decided by the host:
//
//   - The reference must be in the provider spec as the caller handed it
//     in, before any guest code ran in the call (callerRefs): a spec the
//     guest produced — an AddDefaults result, a machine_update patch —
//     never widens what it may read.
//   - Its namespace must be the Machine's own or one the policy names
//     (ConfigVarSource.AllowedNamespaces); for calls without a Machine,
//     the namespace the caller named with provider.WithMachineNamespace: a Machine author who may write
//     Machines in one namespace cannot make the controller read Secrets of
//     another.
func (c *Call) referenced(kind, ns, name, key string) error {
	c.captureCaller()
	ref := ConfigRef{Kind: kind, Namespace: ns, Name: name, Key: key}
	if !slices.Contains(c.callerRefs, ref) {
		c.logger().Warn("config_var reference denied: not in the machine's provider spec", "kind", kind,
			"namespace", ns, "name", name, "key", key)
		return errorf(abi.ErrnoDenied, "%s %s/%s key %s is not referenced by the machine's provider spec", kind, ns, name, key)
	}
	if !c.namespaceAllowed(ns) {
		own := c.callerNamespace
		if own == "" {
			own = "unknown in " + c.Method.String()
		}
		c.logger().Warn("config_var reference denied: namespace not allowed by policy", "kind", kind,
			"namespace", ns, "name", name, "key", key, "machineNamespace", own)
		return errorf(abi.ErrnoDenied, "%s %s/%s: namespace %q is neither the machine's (%s) nor allowed by the policy", kind, ns, name, ns, own)
	}
	return nil
}

func (c *Call) namespaceAllowed(ns string) bool {
	if ns == c.callerNamespace {
		return true
	}
	for _, a := range c.Env.ConfigVar.AllowedNamespaces {
		if a == ns || a == "*" {
			return true
		}
	}
	return false
}

// captureCaller records, once per call and before the guest can change
// them, the references and namespace of the Machine or spec the caller
// passed. It runs on the first config_var and before the first
// machine_update (whose updater may change the caller's Machine in place).
func (c *Call) captureCaller() {
	if c.captured {
		return
	}
	c.captured = true
	if s := c.spec(); s != nil && s.ProviderSpec.Value != nil {
		c.callerRefs = ConfigRefs(s.ProviderSpec.Value.Raw)
	}
	if c.Machine != nil {
		c.callerNamespace = c.Machine.Namespace
	} else {
		c.callerNamespace = provider.MachineNamespace(c.ctx)
	}
}
