package hostfuncs

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
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
	client := fake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "creds"},
			Data: map[string][]byte{"token": []byte("from-secret"), "flag": []byte("true")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "other"},
			Data: map[string][]byte{"token": []byte("not-yours")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"},
			Data: map[string]string{"region": "fsn1"}},
	)
	env := &Env{ConfigVar: ConfigVarSource{
		Client:     client,
		AllowedEnv: []string{"HZ_TOKEN"},
		LookupEnv: func(k string) (string, bool) {
			return map[string]string{"HZ_TOKEN": "from-env", "AWS_SECRET_ACCESS_KEY": "controller-secret"}[k], true
		},
	}}
	secretRef := `{"secretKeyRef":{"namespace":"kube-system","name":"creds","key":"token"}}`
	providerSpec := `{"cloudProviderSpec":{"token":` + secretRef + `,
		"flag":{"secretKeyRef":{"namespace":"kube-system","name":"creds","key":"flag"}},
		"nested":[{"region":{"configMapKeyRef":{"namespace":"default","name":"cfg","key":"region"}}}],
		"missing":{"secretKeyRef":{"namespace":"kube-system","name":"creds","key":"nope"}}}}`
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
	for _, part := range []abi.Input{abi.InputMachine, abi.InputUserdata, abi.InputNewUID, 0, 99} {
		var he *Error
		if _, err := c.Input(part); !errors.As(err, &he) || he.Errno != abi.ErrnoUnavailable {
			t.Errorf("Validate offered %s: %v", part, err)
		}
	}
}
