package providerconfig_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/wasmprov/wasmprov/apis/providerconfig"
)

func ptr[T any](v T) *T { return &v }

func secretRef(ns, name, key string) providerconfig.GlobalSecretKeySelector {
	return providerconfig.GlobalSecretKeySelector{
		ObjectReference: providerconfig.ObjectReference{Namespace: ns, Name: name}, Key: key,
	}
}

func configMapRef(ns, name, key string) providerconfig.GlobalConfigMapKeySelector {
	return providerconfig.GlobalConfigMapKeySelector{
		ObjectReference: providerconfig.ObjectReference{Namespace: ns, Name: name}, Key: key,
	}
}

const (
	secretJSON    = `{"namespace":"kube-system","name":"creds","key":"token"}`
	configMapJSON = `{"namespace":"kube-system","name":"settings","key":"region"}`
)

func TestConfigVarStringUnmarshal(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    providerconfig.ConfigVarString
		wantErr bool
	}{
		{name: "bare string", in: `"eu-central-1"`, want: providerconfig.ConfigVarString{Value: "eu-central-1"}},
		{name: "empty string", in: `""`, want: providerconfig.ConfigVarString{}},
		{name: "escapes", in: `"a\"b\\c\n\u00e9<&>"`, want: providerconfig.ConfigVarString{Value: "a\"b\\c\né<&>"}},
		{name: "escaped slash (upstream fails, JSON allows it)", in: `"a\/b"`, want: providerconfig.ConfigVarString{Value: "a/b"}},
		{name: "surrogate pair (upstream fails, JSON allows it)", in: `"\ud83d\ude00"`, want: providerconfig.ConfigVarString{Value: "😀"}},
		{name: "number keeps its literal text, as upstream", in: `4711`, want: providerconfig.ConfigVarString{Value: "4711"}},
		{name: "float keeps its literal text, as upstream", in: `-1.50e3`, want: providerconfig.ConfigVarString{Value: "-1.50e3"}},
		{name: "bool keeps its literal text, as upstream", in: `true`, want: providerconfig.ConfigVarString{Value: "true"}},
		{name: "false", in: `false`, want: providerconfig.ConfigVarString{Value: "false"}},
		{name: "null is unset (upstream stores the text null)", in: `null`, want: providerconfig.ConfigVarString{}},
		{name: "object with value only", in: `{"value":"eu-central-1"}`, want: providerconfig.ConfigVarString{Value: "eu-central-1"}},
		{name: "secretKeyRef", in: `{"secretKeyRef":` + secretJSON + `}`,
			want: providerconfig.ConfigVarString{SecretKeyRef: secretRef("kube-system", "creds", "token")}},
		{name: "configMapKeyRef and value", in: `{"configMapKeyRef":` + configMapJSON + `,"value":"fallback"}`,
			want: providerconfig.ConfigVarString{Value: "fallback", ConfigMapKeyRef: configMapRef("kube-system", "settings", "region")}},
		{name: "both refs", in: `{"secretKeyRef":` + secretJSON + `,"configMapKeyRef":` + configMapJSON + `}`,
			want: providerconfig.ConfigVarString{
				SecretKeyRef:    secretRef("kube-system", "creds", "token"),
				ConfigMapKeyRef: configMapRef("kube-system", "settings", "region"),
			}},
		{name: "all ObjectReference fields of a ref",
			in: `{"secretKeyRef":{"kind":"Secret","namespace":"ns","name":"n","uid":"u-1","apiVersion":"v1","resourceVersion":"7","fieldPath":"data.x","key":"k"}}`,
			want: providerconfig.ConfigVarString{SecretKeyRef: providerconfig.GlobalSecretKeySelector{
				ObjectReference: providerconfig.ObjectReference{
					Kind: "Secret", Namespace: "ns", Name: "n", UID: "u-1", APIVersion: "v1", ResourceVersion: "7", FieldPath: "data.x",
				},
				Key: "k",
			}}},
		{name: "unknown key inside the object is ignored, as upstream", in: `{"value":"v","valueFrom":{}}`,
			want: providerconfig.ConfigVarString{Value: "v"}},

		{name: "array of numbers", in: `[1,2]`, wantErr: true},
		{name: "array of strings", in: `["a"]`, wantErr: true},
		{name: "empty array", in: `[]`, wantErr: true},
		{name: "number as object value", in: `{"value":1}`, wantErr: true},
		{name: "bool as object value", in: `{"value":true}`, wantErr: true},
		{name: "ref that is not an object", in: `{"secretKeyRef":"kube-system/creds"}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got providerconfig.ConfigVarString
			err := json.Unmarshal([]byte(tt.in), &got)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Unmarshal(%s) = %+v, want an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unmarshal(%s): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Unmarshal(%s) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestConfigVarStringNullKeepsExistingValue(t *testing.T) {
	// encoding/json calls UnmarshalJSON with null for a value-typed field;
	// the field must be left alone, not set to the text "null".
	v := struct {
		Token providerconfig.ConfigVarString `json:"token"`
	}{Token: providerconfig.ConfigVarString{Value: "keep"}}
	if err := json.Unmarshal([]byte(`{"token":null}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.Token.Value != "keep" {
		t.Errorf("token = %q after null, want %q", v.Token.Value, "keep")
	}
}

func TestConfigVarStringMarshal(t *testing.T) {
	tests := []struct {
		name string
		in   providerconfig.ConfigVarString
		want string
	}{
		{name: "value", in: providerconfig.ConfigVarString{Value: "val"}, want: `"val"`},
		{name: "empty", in: providerconfig.ConfigVarString{}, want: `""`},
		{name: "needs escaping (upstream emits invalid JSON)", in: providerconfig.ConfigVarString{Value: `a"b\c` + "\n"}, want: `"a\"b\\c\n"`},
		{name: "html characters", in: providerconfig.ConfigVarString{Value: "spe<ialv&lue"}, want: `"spe\u003cialv\u0026lue"`},
		{name: "secretKeyRef", in: providerconfig.ConfigVarString{SecretKeyRef: secretRef("kube-system", "creds", "token")},
			want: `{"secretKeyRef":` + secretJSON + `}`},
		{name: "configMapKeyRef with value",
			in:   providerconfig.ConfigVarString{Value: "v", ConfigMapKeyRef: configMapRef("kube-system", "settings", "region")},
			want: `{"configMapKeyRef":` + configMapJSON + `,"value":"v"}`},
		{name: "everything, in upstream's key order",
			in: providerconfig.ConfigVarString{
				Value:           "v",
				ConfigMapKeyRef: configMapRef("kube-system", "settings", "region"),
				SecretKeyRef:    secretRef("kube-system", "creds", "token"),
			},
			want: `{"secretKeyRef":` + secretJSON + `,"configMapKeyRef":` + configMapJSON + `,"value":"v"}`},
		{name: "a ref with only kind set counts as unset, as upstream",
			in: providerconfig.ConfigVarString{Value: "v", SecretKeyRef: providerconfig.GlobalSecretKeySelector{
				ObjectReference: providerconfig.ObjectReference{Kind: "Secret"},
			}},
			want: `"v"`},
		{name: "a ref with only a key is set",
			in:   providerconfig.ConfigVarString{SecretKeyRef: providerconfig.GlobalSecretKeySelector{Key: "k"}},
			want: `{"secretKeyRef":{"key":"k"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal = %s, want %s", got, tt.want)
			}
			// Through a pointer and as a struct field the result is the same.
			wrapped, err := json.Marshal(struct {
				V *providerconfig.ConfigVarString `json:"v"`
			}{&tt.in})
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"v":` + tt.want + `}`; string(wrapped) != want {
				t.Errorf("Marshal via pointer field = %s, want %s", wrapped, want)
			}
		})
	}
}

func TestConfigVarStringObjectWithValueOnlyBecomesBare(t *testing.T) {
	var v providerconfig.ConfigVarString
	if err := json.Unmarshal([]byte(`{"value":"cx22"}`), &v); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `"cx22"` {
		t.Errorf("re-encoded %s, want the bare string \"cx22\"", out)
	}
}

func TestConfigVarStringRoundTrip(t *testing.T) {
	for _, v := range []providerconfig.ConfigVarString{
		{},
		{Value: "val"},
		{Value: "spe<ialv&lue"},
		{Value: `quotes " and \ backslashes \n and a newline` + "\n"},
		{Value: "null"},
		{SecretKeyRef: secretRef("ns", "name", "key")},
		{Value: "val", SecretKeyRef: secretRef("ns", "name", "key")},
		{ConfigMapKeyRef: configMapRef("ns", "name", "key")},
		{ConfigMapKeyRef: configMapRef("ns", "name", "key"), SecretKeyRef: secretRef("ns", "name", "key")},
		{Value: "val", ConfigMapKeyRef: configMapRef("ns", "name", "key"), SecretKeyRef: secretRef("ns", "name", "key")},
	} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", v, err)
		}
		var got providerconfig.ConfigVarString
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("Unmarshal(%s): %v", data, err)
		}
		if !reflect.DeepEqual(got, v) {
			t.Errorf("round trip via %s: got %+v, want %+v", data, got, v)
		}
	}
}

func TestConfigVarBoolUnmarshal(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    providerconfig.ConfigVarBool
		wantErr bool
	}{
		{name: "true", in: `true`, want: providerconfig.ConfigVarBool{Value: ptr(true)}},
		{name: "false", in: `false`, want: providerconfig.ConfigVarBool{Value: ptr(false)}},
		{name: "null", in: `null`, want: providerconfig.ConfigVarBool{}},
		{name: "object with value", in: `{"value":true}`, want: providerconfig.ConfigVarBool{Value: ptr(true)}},
		{name: "object with null value", in: `{"value":null}`, want: providerconfig.ConfigVarBool{}},
		{name: "secretKeyRef", in: `{"secretKeyRef":` + secretJSON + `}`,
			want: providerconfig.ConfigVarBool{SecretKeyRef: secretRef("kube-system", "creds", "token")}},
		{name: "secretKeyRef and false", in: `{"value":false,"secretKeyRef":` + secretJSON + `}`,
			want: providerconfig.ConfigVarBool{Value: ptr(false), SecretKeyRef: secretRef("kube-system", "creds", "token")}},
		{name: "configMapKeyRef and true", in: `{"configMapKeyRef":` + configMapJSON + `,"value":true}`,
			want: providerconfig.ConfigVarBool{Value: ptr(true), ConfigMapKeyRef: configMapRef("kube-system", "settings", "region")}},

		{name: "bool as string, rejected as upstream does", in: `"true"`, wantErr: true},
		{name: "other string", in: `"yes"`, wantErr: true},
		{name: "number", in: `1`, wantErr: true},
		{name: "array", in: `[true]`, wantErr: true},
		{name: "string value in object", in: `{"value":"true"}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got providerconfig.ConfigVarBool
			err := json.Unmarshal([]byte(tt.in), &got)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Unmarshal(%s) = %+v, want an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unmarshal(%s): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Unmarshal(%s) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestConfigVarBoolMarshal(t *testing.T) {
	tests := []struct {
		name string
		in   providerconfig.ConfigVarBool
		want string
	}{
		{name: "unset", in: providerconfig.ConfigVarBool{}, want: `null`},
		{name: "true", in: providerconfig.ConfigVarBool{Value: ptr(true)}, want: `true`},
		{name: "false", in: providerconfig.ConfigVarBool{Value: ptr(false)}, want: `false`},
		{name: "secretKeyRef", in: providerconfig.ConfigVarBool{SecretKeyRef: secretRef("kube-system", "creds", "token")},
			want: `{"secretKeyRef":` + secretJSON + `}`},
		{name: "secretKeyRef and true", in: providerconfig.ConfigVarBool{Value: ptr(true), SecretKeyRef: secretRef("kube-system", "creds", "token")},
			want: `{"secretKeyRef":` + secretJSON + `,"value":true}`},
		{name: "secretKeyRef and false", in: providerconfig.ConfigVarBool{Value: ptr(false), SecretKeyRef: secretRef("kube-system", "creds", "token")},
			want: `{"secretKeyRef":` + secretJSON + `,"value":false}`},
		{name: "everything",
			in: providerconfig.ConfigVarBool{
				Value:           ptr(true),
				ConfigMapKeyRef: configMapRef("kube-system", "settings", "region"),
				SecretKeyRef:    secretRef("kube-system", "creds", "token"),
			},
			want: `{"secretKeyRef":` + secretJSON + `,"configMapKeyRef":` + configMapJSON + `,"value":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestConfigVarBoolRoundTrip(t *testing.T) {
	for _, v := range []providerconfig.ConfigVarBool{
		{},
		{Value: ptr(false)},
		{Value: ptr(true)},
		{SecretKeyRef: secretRef("ns", "name", "key")},
		{Value: ptr(true), SecretKeyRef: secretRef("ns", "name", "key")},
		{ConfigMapKeyRef: configMapRef("ns", "name", "key")},
		{Value: ptr(false), ConfigMapKeyRef: configMapRef("ns", "name", "key")},
		{ConfigMapKeyRef: configMapRef("ns", "name", "key"), SecretKeyRef: secretRef("ns", "name", "key")},
		{Value: ptr(true), ConfigMapKeyRef: configMapRef("ns", "name", "key"), SecretKeyRef: secretRef("ns", "name", "key")},
	} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", v, err)
		}
		var got providerconfig.ConfigVarBool
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("Unmarshal(%s): %v", data, err)
		}
		if !reflect.DeepEqual(got, v) {
			t.Errorf("round trip via %s: got %+v, want %+v", data, got, v)
		}
	}
}

func TestObjectReferenceMatchesCoreV1(t *testing.T) {
	// Upstream embeds corev1.ObjectReference in its selectors; the local
	// copy must have the same fields, JSON tags and order, so both encode a
	// selector to the same bytes.
	local := reflect.TypeFor[providerconfig.ObjectReference]()
	core := reflect.TypeFor[corev1.ObjectReference]()
	if local.NumField() != core.NumField() {
		t.Fatalf("ObjectReference has %d fields, corev1.ObjectReference %d", local.NumField(), core.NumField())
	}
	for i := 0; i < core.NumField(); i++ {
		lf, cf := local.Field(i), core.Field(i)
		if lf.Name != cf.Name || lf.Tag.Get("json") != cf.Tag.Get("json") || lf.Type.Kind() != cf.Type.Kind() {
			t.Errorf("field %d: local %s %s `json:%q`, corev1 %s %s `json:%q`",
				i, lf.Name, lf.Type, lf.Tag.Get("json"), cf.Name, cf.Type, cf.Tag.Get("json"))
		}
	}

	localRef := providerconfig.ObjectReference{
		Kind: "Secret", Namespace: "ns", Name: "n", UID: "u", APIVersion: "v1", ResourceVersion: "1", FieldPath: "f",
	}
	coreRef := corev1.ObjectReference{
		Kind: "Secret", Namespace: "ns", Name: "n", UID: "u", APIVersion: "v1", ResourceVersion: "1", FieldPath: "f",
	}
	type upstreamSelector struct {
		corev1.ObjectReference `json:",inline"`
		Key                    string `json:"key,omitempty"`
	}
	got, err := json.Marshal(providerconfig.GlobalSecretKeySelector{ObjectReference: localRef, Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(upstreamSelector{ObjectReference: coreRef, Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("selector encodes to %s, upstream's shape to %s", got, want)
	}
	if !strings.Contains(string(got), `"uid":"u"`) {
		t.Errorf("selector JSON %s lacks uid", got)
	}
}
