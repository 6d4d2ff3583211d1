package provider

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// manifests returns the JSON of every Machine in the API types' test data.
func manifests(t testing.TB) map[string][]byte {
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "apis", "cluster", "v1alpha1", "testdata", "*machine*.yaml"))
	out := map[string][]byte{}
	for _, f := range files {
		y, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(y)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = j
	}
	if len(out) < 3 {
		t.Fatalf("found only %d manifests", len(out))
	}
	return out
}

// The SDK's decoders must give exactly what encoding/json gives.
func TestDecodersMatchEncodingJSON(t *testing.T) {
	for name, doc := range manifests(t) {
		t.Run(name, func(t *testing.T) {
			var want, got Machine
			if err := json.Unmarshal(doc, &want); err != nil {
				t.Fatal(err)
			}
			if err := decodeMachine(doc, &got); err != nil {
				t.Fatal(err)
			}
			assertSameJSON(t, got, want)
			var wantSpec, gotSpec MachineSpec
			spec, _ := json.Marshal(want.Spec)
			json.Unmarshal(spec, &wantSpec)
			if err := decodeMachineSpec(spec, &gotSpec); err != nil {
				t.Fatal(err)
			}
			assertSameJSON(t, gotSpec, wantSpec)
			if len(want.Spec.ProviderSpec.Value) > 0 && want.Kind == "Machine" {
				var wc, gc Config
				if err := json.Unmarshal(want.Spec.ProviderSpec.Value, &wc); err != nil {
					t.Fatal(err)
				}
				if err := decodeConfig(want.Spec.ProviderSpec.Value, &gc); err != nil {
					t.Fatal(err)
				}
				assertSameJSON(t, gc, wc)
			}
		})
	}
}

// assertSameJSON compares two values by their canonical JSON (RawMessage
// whitespace aside) and by deep equality of the decoded forms.
func assertSameJSON(t *testing.T, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	var gv, wv any
	json.Unmarshal(g, &gv)
	json.Unmarshal(w, &wv)
	if !reflect.DeepEqual(gv, wv) {
		t.Fatalf("decoders differ:\n got %s\nwant %s", g, w)
	}
}

func TestDecodeFields(t *testing.T) {
	doc := []byte(`{"s":"a\"b\u00e9\ud83d\ude00","b":true,"i":-42,"f":2.5,"l":["x","y"],"m":{"k":"v"},
		"r":{"nested":[1,{"deep":null}]},"ignored":{"x":[1,2,3]},"n":null}`)
	var (
		s    string
		b    bool
		i    int
		f    float64
		l    []string
		m    map[string]string
		r    json.RawMessage
		null string
	)
	err := DecodeFields(doc, Fields{"s": &s, "b": &b, "i": &i, "f": &f, "l": &l, "m": &m, "r": &r, "n": &null})
	if err != nil {
		t.Fatal(err)
	}
	if s != "a\"bé😀" || !b || i != -42 || f != 2.5 || len(l) != 2 || m["k"] != "v" ||
		string(r) != `{"nested":[1,{"deep":null}]}` || null != "" {
		t.Fatalf("decoded %q %v %d %v %v %v %s %q", s, b, i, f, l, m, r, null)
	}
	for _, bad := range []string{`{"s":1}`, `{"b":"yes"}`, `{"i":"1"}`, `{"s":"unterminated}`, `{"s" "x"}`, `[1]`, `{"l":[1]}`, ``} {
		if err := DecodeFields([]byte(bad), Fields{"s": &s, "b": &b, "i": &i, "l": &l}); err == nil {
			t.Errorf("%s: decoded without error", bad)
		}
	}
}

// FuzzDecodeMachine checks that the SDK decoder never panics and, whenever
// the Kubernetes decoder accepts a document, agrees with it. The reference
// is sigs.k8s.io/json's case-sensitive mode, as the API server decodes:
// plain encoding/json also matches "speC" to "spec", which the SDK (like
// Kubernetes) does not.
func FuzzDecodeMachine(f *testing.F) {
	for _, doc := range manifests(f) {
		f.Add(doc)
	}
	f.Add([]byte(`{"metadata":{"name":"\ud800"}}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		var got, want Machine
		gerr := decodeMachine(doc, &got)
		if sigsjson.UnmarshalCaseSensitivePreserveInts(doc, &want) != nil || gerr != nil {
			return
		}
		assertSameJSON(t, got, want)
	})
}

// BenchmarkDecodeMachine compares the SDK decoder with encoding/json on a
// realistic Machine (natively; inside a guest the gap is wider).
func BenchmarkDecodeMachine(b *testing.B) {
	doc := manifests(b)["hetzner-machine.yaml"]
	b.Run("sdk", func(b *testing.B) {
		for b.Loop() {
			var m Machine
			if err := decodeMachine(doc, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var m Machine
			if err := json.Unmarshal(doc, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
