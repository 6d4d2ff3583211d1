package hostmodule

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/wasmprov/wasmprov/provider"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/testing/kubefake"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
)

func testCall(t *testing.T, env *Env, m abi.Method, providerSpec string) *Call {
	t.Helper()
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	c := NewCall(context.Background(), env, m, abi.AllCapabilities)
	spec := &clusterv1alpha1.MachineSpec{}
	spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: []byte(providerSpec)}
	c.Spec = spec
	return c
}

func configVarReq(typ, v, env string) []byte {
	b, _ := json.Marshal(abi.ConfigVarRequest{Type: typ, Var: json.RawMessage(v), EnvFallback: env})
	return b
}

func TestConfigVar(t *testing.T) {
	client := kubefake.New(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "creds"},
			Data: map[string][]byte{"token": []byte("from-secret"), "flag": []byte("true")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "other"},
			Data: map[string][]byte{"token": []byte("not-yours")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"},
			Data: map[string]string{"region": "fsn1"}},
	)
	env := &Env{ConfigVar: ConfigVarSource{
		Client:            client,
		AllowedEnv:        []string{"HZ_TOKEN"},
		AllowedNamespaces: []string{"kube-system", "default"},
		LookupEnv: func(k string) (string, bool) {
			return map[string]string{"HZ_TOKEN": "from-env", "AWS_SECRET_ACCESS_KEY": "controller-secret"}[k], true
		},
	}}
	secretRef := `{"secretKeyRef":{"namespace":"kube-system","name":"creds","key":"token"}}`
	providerSpec := `{"cloudProviderSpec":{"token":` + secretRef + `,
		"flag":{"secretKeyRef":{"namespace":"kube-system","name":"creds","key":"flag"}},
		"nested":[{"region":{"configMapKeyRef":{"namespace":"default","name":"cfg","key":"region"}}}],
		"missing":{"secretKeyRef":{"namespace":"kube-system","name":"creds","key":"nope"}},
		"gone":{"secretKeyRef":{"namespace":"kube-system","name":"gone","key":"token"}}}}`
	cases := []struct {
		name, typ, v, env string
		want              string
		errno             abi.Errno
	}{
		{"bare string", "string", `"inline"`, "", "inline", 0},
		{"object value", "string", `{"value":"inline"}`, "", "inline", 0},
		{"referenced secret", "string", secretRef, "", "from-secret", 0},
		{"configmap in a nested list", "string", `{"configMapKeyRef":{"namespace":"default","name":"cfg","key":"region"}}`, "", "fsn1", 0},
		{"secret not referenced by the machine", "string", `{"secretKeyRef":{"namespace":"kube-system","name":"other","key":"token"}}`, "", "", abi.ErrnoDenied},
		{"referenced key missing", "string", `{"secretKeyRef":{"namespace":"kube-system","name":"creds","key":"nope"}}`, "", "", abi.ErrnoNotFound},
		{"referenced secret missing", "string", `{"secretKeyRef":{"namespace":"kube-system","name":"gone","key":"token"}}`, "", "", abi.ErrnoNotFound},
		{"empty falls back to an allowed env var", "string", `""`, "HZ_TOKEN", "from-env", 0},
		{"null falls back too", "string", `null`, "HZ_TOKEN", "from-env", 0},
		{"env var not in the policy stays unset", "string", `""`, "AWS_SECRET_ACCESS_KEY", "", 0},
		{"a value wins over the env fallback", "string", `"inline"`, "HZ_TOKEN", "inline", 0},
		{"bool bare", "bool", `true`, "", "true", 0},
		{"bool from a referenced secret", "bool", `{"secretKeyRef":{"namespace":"kube-system","name":"creds","key":"flag"}}`, "", "true", 0},
		{"bool unset", "bool", `{}`, "", "", 0},
		{"bool given as an array", "bool", `[true]`, "", "", abi.ErrnoInvalid},
		{"unknown type", "int", `1`, "", "", abi.ErrnoInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testCall(t, env, abi.MethodValidate, providerSpec)
			got, err := c.Invoke(abi.ImportConfigVar, configVarReq(tc.typ, tc.v, tc.env))
			if tc.errno != 0 {
				var he *Error
				if !errors.As(err, &he) || he.Errno != tc.errno {
					t.Fatalf("want errno %s, got %v", tc.errno, err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestUndeclaredCapabilityIsRefused(t *testing.T) {
	env := &Env{}
	c := testCall(t, env, abi.MethodValidate, `{}`)
	c.Granted = abi.CapLog // not config_var
	_, err := c.Invoke(abi.ImportConfigVar, configVarReq("string", `"x"`, ""))
	var he *Error
	if !errors.As(err, &he) || he.Errno != abi.ErrnoNotDeclared {
		t.Fatalf("want ErrnoNotDeclared, got %v", err)
	}
}

func TestInputsPerMethod(t *testing.T) {
	env := &Env{}
	c := testCall(t, env, abi.MethodValidate, `{"a":1}`)
	if b, err := c.Input(abi.InputProviderSpec); err != nil || string(b) != `{"a":1}` {
		t.Fatalf("provider spec: %q, %v", b, err)
	}
	for _, part := range []abi.Input{abi.InputMachine, abi.InputUserdata, abi.InputNewUID, abi.InputMachineList} {
		var he *Error
		if _, err := c.Input(part); !errors.As(err, &he) || he.Errno != abi.ErrnoUnavailable {
			t.Errorf("Validate offered %s: %v", part, err)
		}
	}
	// A part no method has is a bad argument, not an unavailable one
	// (abi/SPEC.md §5.3).
	for _, part := range []abi.Input{0, 8, 99, -1} {
		var he *Error
		if _, err := c.Input(part); !errors.As(err, &he) || he.Errno != abi.ErrnoInvalid {
			t.Errorf("unknown part %d: want ErrnoInvalid, got %v", part, err)
		}
	}
}

// The references config_var may resolve are the caller's: the Machine as
// it was handed in, before any guest code ran. Here the updater's fresh
// copy carries a reference the caller's Machine did not (a guest cannot
// add one through machine_update, see TestMachineUpdateRefusals, but a
// conflict refresh or an updater that writes in place could): it stays
// unreadable for the rest of the call.
func TestConfigVarReadsOnlyTheCallersReferences(t *testing.T) {
	client := kubefake.New(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mine"}, Data: map[string][]byte{"token": []byte("mine")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "admin"}, Data: map[string][]byte{"token": []byte("admin")}},
	)
	mine := `{"secretKeyRef":{"namespace":"ns","name":"mine","key":"token"}}`
	admin := `{"secretKeyRef":{"namespace":"ns","name":"admin","key":"token"}}`
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", UID: "u"}}
	m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: []byte(`{"cloudProviderSpec":{"token":` + mine + `}}`)}
	calls := 0
	c := updateCall(t, m, &calls)
	c.Env.ConfigVar.Client = client
	c.Data.Update = func(cur *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
		// The caller's Machine changed in place, and so did the copy.
		cur.Spec.ProviderSpec.Value.Raw = []byte(`{"cloudProviderSpec":{"token":` + mine + `,"other":` + admin + `}}`)
		next := cur.DeepCopy()
		modify(next)
		return next, nil
	}
	if _, err := c.Invoke(abi.ImportMachineUpdate, []byte(`{"annotations":{"a":"b"}}`)); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Invoke(abi.ImportConfigVar, configVarReq("string", mine, "")); err != nil || string(got) != "mine" {
		t.Fatalf("the caller's own reference: %q, %v", got, err)
	}
	_, err := c.Invoke(abi.ImportConfigVar, configVarReq("string", admin, ""))
	var he *Error
	if !errors.As(err, &he) || he.Errno != abi.ErrnoDenied {
		t.Fatalf("a reference the caller did not pass: want ErrnoDenied, got %v", err)
	}
}

// Secrets and ConfigMaps are read from the Machine's own namespace and
// those the policy names, whatever the provider spec references.
func TestConfigVarNamespaces(t *testing.T) {
	client := kubefake.New(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "admin-token"}, Data: map[string][]byte{"token": []byte("cluster-admin")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "hetzner"}, Data: map[string][]byte{"token": []byte("team-a")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "cfg"}, Data: map[string]string{"k": "v"}},
	)
	admin := `{"secretKeyRef":{"namespace":"kube-system","name":"admin-token","key":"token"}}`
	own := `{"secretKeyRef":{"namespace":"team-a","name":"hetzner","key":"token"}}`
	shared := `{"configMapKeyRef":{"namespace":"shared","name":"cfg","key":"k"}}`
	spec := `{"cloudProviderSpec":{"a":` + admin + `,"b":` + own + `,"c":` + shared + `}}`
	for _, tc := range []struct {
		name      string
		allowed   []string
		method    abi.Method
		ctxNS     string // provider.WithMachineNamespace, for spec-only calls
		ref, want string
		errno     abi.Errno
	}{
		{"own namespace", nil, abi.MethodGet, "", own, "team-a", 0},
		{"kube-system referenced but not allowed", nil, abi.MethodGet, "", admin, "", abi.ErrnoDenied},
		{"configmap elsewhere, not allowed", nil, abi.MethodGet, "", shared, "", abi.ErrnoDenied},
		{"allowed by the policy", []string{"kube-system"}, abi.MethodGet, "", admin, "cluster-admin", 0},
		{"every namespace", []string{"*"}, abi.MethodGet, "", shared, "v", 0},
		{"spec-only call without a namespace", nil, abi.MethodValidate, "", own, "", abi.ErrnoDenied},
		{"spec-only call told its namespace", nil, abi.MethodValidate, "team-a", own, "team-a", 0},
		{"spec-only call told its namespace, another one", nil, abi.MethodValidate, "team-a", admin, "", abi.ErrnoDenied},
		{"spec-only call, policy namespace", []string{"shared"}, abi.MethodValidate, "", shared, "v", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &Env{ConfigVar: ConfigVarSource{Client: client, AllowedNamespaces: tc.allowed}}
			c := testCall(t, env, tc.method, spec)
			if tc.method != abi.MethodValidate {
				m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "team-a", UID: "u"}}
				m.Spec = *c.Spec
				c.Spec, c.Machine = nil, m
			}
			if tc.ctxNS != "" {
				SetContext(c, provider.WithMachineNamespace(context.Background(), tc.ctxNS))
			}
			got, err := c.Invoke(abi.ImportConfigVar, configVarReq("string", tc.ref, ""))
			if tc.errno != 0 {
				var he *Error
				if !errors.As(err, &he) || he.Errno != tc.errno {
					t.Fatalf("want %s, got %q, %v", tc.errno, got, err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestAddedConfigRefs(t *testing.T) {
	ref := func(ns, name string) string {
		return `{"secretKeyRef":{"namespace":"` + ns + `","name":"` + name + `","key":"k"}}`
	}
	for _, tc := range []struct {
		before, after string
		added         int
	}{
		{`{"a":` + ref("ns", "s") + `}`, `{"a":` + ref("ns", "s") + `,"b":1}`, 0},
		{`{"a":` + ref("ns", "s") + `}`, `{"b":[` + ref("ns", "s") + `]}`, 0}, // moved, not added
		{`{}`, `{"a":` + ref("kube-system", "admin-token") + `}`, 1},
		{`{"a":` + ref("ns", "s") + `}`, `{"a":` + ref("ns", "t") + `}`, 1},
		{`{}`, `{"a":{"configMapKeyRef":{"namespace":"x","name":"y","key":"z"}}}`, 1},
		{`{}`, `{"a":{"secretKeyRef":{"namespace":"x","name":"y"}}}`, 0}, // incomplete: never resolved
		{`not json`, `{"a":` + ref("ns", "s") + `}`, 1},
	} {
		if got := AddedConfigRefs([]byte(tc.before), []byte(tc.after)); len(got) != tc.added {
			t.Errorf("AddedConfigRefs(%s, %s) = %v, want %d", tc.before, tc.after, got, tc.added)
		}
	}
}
