package crdgen

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// sample is a type with one field of each shape the generator maps.
type sample struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   sampleSpec   `json:"spec"`
	Status sampleStatus `json:"status,omitempty"`
}

type sampleSpec struct {
	Name    string               `json:"name"`
	Count   *int32               `json:"count,omitempty"`
	Big     int64                `json:"big,omitempty"`
	On      bool                 `json:"on,omitzero"`
	Labels  map[string]string    `json:"labels,omitempty"`
	Raw     runtime.RawExtension `json:"raw"`
	Data    []byte               `json:"data,omitempty"`
	Items   []sampleItem         `json:"items,omitempty"`
	When    metav1.Time          `json:"when,omitempty"`
	Skipped string               `json:"-"`
}

type sampleItem struct {
	Key string `json:"key"`
}

type sampleStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

func (s *sample) DeepCopyObject() runtime.Object { c := *s; return &c }

func TestSchema(t *testing.T) {
	d := Definition{Header: "a header\n\nsecond", Group: "example.com", Version: "v1", Kind: "Sample",
		ListKind: "SampleList", Plural: "samples", Singular: "sample", Namespaced: true,
		Object: &sample{}, Docs: map[string]string{"sample": "A sample.", "sampleSpec.Name": "Name is the name."}}
	out, err := d.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "# a header\n#\n# second\napiVersion: apiextensions.k8s.io/v1\n") {
		t.Errorf("header: %q", out[:80])
	}
	var crd map[string]any
	if err := yaml.Unmarshal(out, &crd); err != nil {
		t.Fatal(err)
	}
	root := dig(t, crd, "spec", "versions", "0", "schema", "openAPIV3Schema")
	if root["description"] != "A sample." || !reflect.DeepEqual(root["required"], []any{"spec"}) {
		t.Errorf("root: description %v, required %v", root["description"], root["required"])
	}
	spec := dig(t, root, "properties", "spec")
	if !reflect.DeepEqual(spec["required"], []any{"name", "raw"}) {
		t.Errorf("spec required %v, want the fields without omitempty/omitzero", spec["required"])
	}
	props := dig(t, spec, "properties")
	want := map[string]string{
		"name":   `{"description":"Name is the name.","type":"string"}`,
		"count":  `{"format":"int32","type":"integer"}`,
		"big":    `{"format":"int64","type":"integer"}`,
		"on":     `{"type":"boolean"}`,
		"labels": `{"additionalProperties":{"type":"string"},"type":"object"}`,
		"raw":    `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`,
		"data":   `{"format":"byte","type":"string"}`,
		"items":  `{"items":{"properties":{"key":{"type":"string"}},"required":["key"],"type":"object"},"type":"array"}`,
		"when":   `{"format":"date-time","type":"string"}`,
	}
	for name, w := range want {
		got, _ := yaml.Marshal(props[name])
		j, _ := yaml.YAMLToJSON(got)
		if string(j) != w {
			t.Errorf("%s: %s, want %s", name, j, w)
		}
	}
	if _, ok := props["Skipped"]; ok || len(props) != len(want) {
		t.Errorf("properties %v", props)
	}
	conds := dig(t, root, "properties", "status", "properties", "conditions")
	if conds["x-kubernetes-list-type"] != "map" || !reflect.DeepEqual(conds["x-kubernetes-list-map-keys"], []any{"type"}) {
		t.Errorf("conditions: %v", conds)
	}
	if dig(t, root, "properties", "metadata")["type"] != "object" || dig(t, root, "properties", "kind")["type"] != "string" {
		t.Error("metadata or kind")
	}
}

func TestDocs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "types.go")
	src := "package p\n\n// T is a type.\n// +kubebuilder:object:root=true\ntype T struct {\n\t// A is\n\t// a field.\n\tA, B string\n\tC int\n}\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	docs, err := Docs(file)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"T": "T is a type.", "T.A": "A is a field.", "T.B": "A is a field."}
	if !reflect.DeepEqual(docs, want) {
		t.Errorf("docs %v, want %v", docs, want)
	}
}

// dig walks maps and lists by key or index.
func dig(t *testing.T, v any, path ...string) map[string]any {
	t.Helper()
	for _, k := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[k]
		case []any:
			v = c[0]
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v: not an object: %v", path, v)
	}
	return m
}
