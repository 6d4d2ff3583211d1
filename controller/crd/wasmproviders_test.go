package crd_test

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/wasmprov/wasmprov/apis/wasmprov/v1alpha1"
	"github.com/wasmprov/wasmprov/controller/crd"
	"github.com/wasmprov/wasmprov/internal/crdgen"
	"github.com/wasmprov/wasmprov/internal/testing/apitest"
	"github.com/wasmprov/wasmprov/runtime/registry"
)

// The CRD is written by hand, so these tests are what keeps its schema and
// the Go types in step: walking both at once, every JSON field of the
// types must be a schema property of the matching type and vice versa,
// required lists must be the fields without omitempty, and descriptions
// must be the Go doc comments.

const (
	crdPath = "wasmprov.io_wasmproviders.yaml"
	// typesGo is the API types' source, whose doc comments are the
	// schema's descriptions.
	typesGo = "../../apis/wasmprov/v1alpha1/types.go"
)

type obj = map[string]any

func loadCRD(t *testing.T) obj {
	t.Helper()
	y, err := os.ReadFile(crdPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(y, crd.WasmProvidersYAML) {
		t.Fatal("crd.WasmProvidersYAML differs from the file (embed.go embeds another file?)")
	}
	var c obj
	if err := yaml.UnmarshalStrict(y, &c); err != nil {
		t.Fatalf("%s: %v", crdPath, err)
	}
	return c
}

// at walks a generic YAML document along keys (map keys, or decimal
// indexes into lists) and fails the test when a step is missing.
func at(t *testing.T, v any, path ...string) any {
	t.Helper()
	for i, k := range path {
		switch c := v.(type) {
		case obj:
			n, ok := c[k]
			if !ok {
				t.Fatalf("CRD: no %q at %s", k, strings.Join(path[:i], "."))
			}
			v = n
		case []any:
			var idx int
			if _, err := fmt.Sscan(k, &idx); err != nil || idx < 0 || idx >= len(c) {
				t.Fatalf("CRD: no index %q at %s", k, strings.Join(path[:i], "."))
			}
			v = c[idx]
		default:
			t.Fatalf("CRD: %s is a %T, not a map or list", strings.Join(path[:i], "."), v)
		}
	}
	return v
}

func openAPISchema(t *testing.T, c obj) obj {
	t.Helper()
	versions := at(t, c, "spec", "versions").([]any)
	if len(versions) != 1 {
		t.Fatalf("CRD has %d versions, want 1", len(versions))
	}
	return at(t, versions[0], "schema", "openAPIV3Schema").(obj)
}

// goDocs returns the doc comments of typesGo's types ("Source") and
// struct fields ("Source.Image"), as crdgen reads them for the generated
// CRDs: marker lines dropped, white space collapsed.
func goDocs(t *testing.T) map[string]string {
	t.Helper()
	docs, err := crdgen.Docs(typesGo)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 20 {
		t.Fatalf("found only %d doc comments in types.go", len(docs))
	}
	return docs
}

// jsonField is one field of a Go struct as encoding/json sees it.
type jsonField struct {
	name      string
	omitEmpty bool
	goName    string // the Go field name, for doc lookup
	owner     reflect.Type
	typ       reflect.Type
}

// jsonFields lists t's JSON fields, flattening ",inline" embedded structs
// (metav1.TypeMeta) as encoding/json flattens untagged embedded ones.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{
			name:      name,
			omitEmpty: slices.Contains(strings.Split(opts, ","), "omitempty"),
			goName:    f.Name,
			owner:     t,
			typ:       f.Type,
		})
	}
	return out
}

var (
	timeGoType         = reflect.TypeFor[metav1.Time]()
	durationGoType     = reflect.TypeFor[metav1.Duration]()
	rawExtensionGoType = reflect.TypeFor[runtime.RawExtension]()
	objectMetaGoType   = reflect.TypeFor[metav1.ObjectMeta]()
	ourPkgPath         = reflect.TypeFor[v1alpha1.WasmProvider]().PkgPath()
)

// schemaChecker compares a Go type with the schema node it is encoded
// under, recording every difference.
type schemaChecker struct {
	docs    map[string]string
	errs    []string
	visited int // schema properties compared
}

// errorf records a difference: the checker collects them rather than
// failing a test, so that TestCRDDriftIsDetected can see what it reports.
func (c *schemaChecker) errorf(path, format string, args ...any) {
	c.errs = append(c.errs, path+": "+fmt.Sprintf(format, args...))
}

func schemaType(s obj) string { v, _ := s["type"].(string); return v }

func (c *schemaChecker) check(path string, typ reflect.Type, s obj) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch {
	case typ == timeGoType:
		if schemaType(s) != "string" || s["format"] != "date-time" {
			c.errorf(path, "metav1.Time wants type string, format date-time; schema has type %q format %v", schemaType(s), s["format"])
		}
		return
	case typ == durationGoType:
		// metav1.Duration is a string Go's time.ParseDuration reads.
		if schemaType(s) != "string" || s["pattern"] == nil {
			c.errorf(path, "metav1.Duration wants type string with a pattern; schema has type %q pattern %v", schemaType(s), s["pattern"])
		}
		return
	case typ == rawExtensionGoType:
		if schemaType(s) != "object" || s["x-kubernetes-preserve-unknown-fields"] != true {
			c.errorf(path, "runtime.RawExtension wants type object with x-kubernetes-preserve-unknown-fields: true; schema has %v", s)
		}
		if _, ok := s["properties"]; ok {
			c.errorf(path, "a RawExtension's schema lists properties; the controller decodes it itself")
		}
		return
	case typ == objectMetaGoType:
		// The API server supplies metadata's schema; a CRD says object only.
		if schemaType(s) != "object" {
			c.errorf(path, "metadata wants type object, schema has %q", schemaType(s))
		}
		return
	}
	if s["x-kubernetes-preserve-unknown-fields"] == true {
		c.errorf(path, "x-kubernetes-preserve-unknown-fields on a typed field: the API server would keep misspelt fields")
	}

	switch typ.Kind() {
	case reflect.String:
		c.wantType(path, s, "string", "")
	case reflect.Bool:
		c.wantType(path, s, "boolean", "")
	case reflect.Int32:
		c.wantType(path, s, "integer", "int32")
	case reflect.Int64:
		c.wantType(path, s, "integer", "int64")
	case reflect.Slice:
		if typ.Elem().Kind() == reflect.Uint8 {
			c.wantType(path, s, "string", "byte")
			return
		}
		c.wantType(path, s, "array", "")
		items, ok := s["items"].(obj)
		if !ok {
			c.errorf(path, "array without items")
			return
		}
		c.check(path+"[]", typ.Elem(), items)
	case reflect.Struct:
		c.wantType(path, s, "object", "")
		c.checkStruct(path, typ, s)
	default:
		c.errorf(path, "Go kind %s (%s) has no schema mapping in this test; extend it", typ.Kind(), typ)
	}
}

func (c *schemaChecker) wantType(path string, s obj, typ, format string) {
	if schemaType(s) != typ {
		c.errorf(path, "schema type %q, Go type wants %q", schemaType(s), typ)
	}
	if got, _ := s["format"].(string); got != format {
		c.errorf(path, "schema format %q, Go type wants %q", got, format)
	}
}

func (c *schemaChecker) checkStruct(path string, typ reflect.Type, s obj) {
	props, _ := s["properties"].(obj)
	fields := jsonFields(typ)
	goNames := map[string]bool{}
	var wantRequired []string
	for _, f := range fields {
		goNames[f.name] = true
		if !f.omitEmpty {
			wantRequired = append(wantRequired, f.name)
		}
		fp := path + "." + f.name
		ps, ok := props[f.name].(obj)
		if !ok {
			c.errorf(fp, "Go field %s.%s has no schema property %q", typ.Name(), f.goName, f.name)
			continue
		}
		c.visited++
		if f.typ == objectMetaGoType {
			// The API server refuses a CRD that says anything of metadata
			// but its type, a description included.
			if len(ps) != 1 {
				c.errorf(fp, "metadata may have a type only, schema has %v", ps)
			}
		} else {
			c.checkDescription(fp, f, ps)
		}
		c.check(fp, f.typ, ps)
	}
	for name := range props {
		if !goNames[name] {
			c.errorf(path+"."+name, "schema property has no JSON field in Go type %s", typ)
		}
	}
	var gotRequired []string
	if r, ok := s["required"].([]any); ok {
		for _, v := range r {
			gotRequired = append(gotRequired, fmt.Sprint(v))
		}
	}
	sort.Strings(wantRequired)
	sort.Strings(gotRequired)
	if !slices.Equal(wantRequired, gotRequired) {
		c.errorf(path, "required %q, but the fields of %s without omitempty are %q", gotRequired, typ, wantRequired)
	}
}

// checkDescription wants the field's Go doc comment as its description
// or, for a field without one, its type's doc comment; fields of other
// packages' types (metav1.Condition, corev1.SecretReference) need only a
// description.
func (c *schemaChecker) checkDescription(path string, f jsonField, s obj) {
	got := crdgen.NormaliseDoc(fmt.Sprint(s["description"]))
	if _, ok := s["description"].(string); !ok || got == "" {
		c.errorf(path, "no description")
		return
	}
	if f.owner.PkgPath() != ourPkgPath {
		return
	}
	want := c.docs[f.owner.Name()+"."+f.goName]
	if want == "" {
		elem := f.typ
		for elem.Kind() == reflect.Pointer || elem.Kind() == reflect.Slice {
			elem = elem.Elem()
		}
		if elem.PkgPath() == ourPkgPath {
			want = c.docs[elem.Name()]
		}
	}
	if want != "" && got != want {
		c.errorf(path, "description differs from the Go doc comment\nschema: %s\nGo:     %s", got, want)
	}
}

func TestCRDSchemaMatchesGoTypes(t *testing.T) {
	root := openAPISchema(t, loadCRD(t))
	c := &schemaChecker{docs: goDocs(t)}
	if got, want := crdgen.NormaliseDoc(fmt.Sprint(root["description"])), c.docs["WasmProvider"]; got != want {
		t.Errorf("root description differs from WasmProvider's doc comment\nschema: %s\nGo:     %s", got, want)
	}
	c.check("WasmProvider", reflect.TypeFor[v1alpha1.WasmProvider](), root)
	for _, e := range c.errs {
		t.Error(e)
	}
	// Every field of every type, metav1.Condition's six included.
	if c.visited < 45 {
		t.Errorf("compared only %d schema properties; the walk stopped early", c.visited)
	}
}

func TestCRDDriftIsDetected(t *testing.T) {
	// The comparison must be able to fail: a Go field renamed (the schema
	// lacks the new name and has a property Go lacks), a wrong type, a
	// wrong required list and a description that is not the doc comment
	// are all reported.
	type renamed struct {
		Name  string `json:"name"`
		Count int32  `json:"cnt,omitempty"`
	}
	type wrongType struct {
		Name string `json:"name,omitempty"`
	}
	tests := []struct {
		name string
		typ  reflect.Type
		s    obj
		want []string
	}{
		{
			name: "renamed field",
			typ:  reflect.TypeFor[renamed](),
			s: obj{"type": "object", "required": []any{"name"}, "properties": obj{
				"name":  obj{"type": "string", "description": "x"},
				"count": obj{"type": "integer", "format": "int32", "description": "x"},
			}},
			want: []string{`.cnt: Go field renamed.Count has no schema property "cnt"`, `.count: schema property has no JSON field`},
		},
		{
			name: "wrong type and required",
			typ:  reflect.TypeFor[wrongType](),
			s: obj{"type": "object", "required": []any{"name"}, "properties": obj{
				"name": obj{"type": "integer", "description": "x"},
			}},
			want: []string{`schema type "integer", Go type wants "string"`, `required ["name"], but the fields`},
		},
		{
			name: "wrong format",
			typ:  reflect.TypeFor[renamed](),
			s: obj{"type": "object", "required": []any{"name"}, "properties": obj{
				"name": obj{"type": "string", "description": "x"},
				"cnt":  obj{"type": "integer", "format": "int64", "description": "x"},
			}},
			want: []string{`schema format "int64", Go type wants "int32"`},
		},
		{
			name: "preserve-unknown-fields on a typed object",
			typ:  reflect.TypeFor[wrongType](),
			s: obj{"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": obj{
				"name": obj{"type": "string"},
			}},
			want: []string{`x-kubernetes-preserve-unknown-fields on a typed field`, `.name: no description`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &schemaChecker{docs: map[string]string{}}
			c.check("x", tt.typ, tt.s)
			all := strings.Join(c.errs, "\n")
			for _, want := range tt.want {
				if !strings.Contains(all, want) {
					t.Errorf("want a difference containing %q; got:\n%s", want, all)
				}
			}
		})
	}

	// A description that drifted from types.go's doc comment.
	root := openAPISchema(t, loadCRD(t))
	spec := at(t, root, "properties", "spec").(obj)
	cp := at(t, spec, "properties", "cloudProvider").(obj)
	cp["description"] = "Something else."
	c := &schemaChecker{docs: goDocs(t)}
	c.check("WasmProvider", reflect.TypeFor[v1alpha1.WasmProvider](), root)
	if all := strings.Join(c.errs, "\n"); len(c.errs) != 1 || !strings.Contains(all, "spec.cloudProvider: description differs") {
		t.Errorf("changed description: want one difference at spec.cloudProvider; got:\n%s", all)
	}
}

func TestCRDResource(t *testing.T) {
	c := loadCRD(t)
	if c["apiVersion"] != "apiextensions.k8s.io/v1" || c["kind"] != "CustomResourceDefinition" {
		t.Errorf("apiVersion/kind = %v/%v", c["apiVersion"], c["kind"])
	}
	if got, want := at(t, c, "metadata", "name"), v1alpha1.Resource+"."+v1alpha1.GroupName; got != want {
		t.Errorf("metadata.name = %v, want %s", got, want)
	}
	if got := at(t, c, "spec", "group"); got != v1alpha1.GroupName {
		t.Errorf("group = %v", got)
	}
	if got := at(t, c, "spec", "scope"); got != "Cluster" {
		t.Errorf("scope = %v, want Cluster", got)
	}
	wantNames := obj{
		"kind": "WasmProvider", "listKind": "WasmProviderList",
		"plural": v1alpha1.Resource, "singular": "wasmprovider",
		"shortNames": []any{"wp"}, "categories": []any{"wasmprov"},
	}
	if got := at(t, c, "spec", "names"); !reflect.DeepEqual(got, wantNames) {
		t.Errorf("names = %v, want %v", got, wantNames)
	}
	// The kinds the CRD names are the ones the scheme registers.
	scheme := apitest.Scheme(t, v1alpha1.AddToScheme)
	for _, kind := range []string{"WasmProvider", "WasmProviderList"} {
		if !scheme.Recognizes(v1alpha1.SchemeGroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not know %s", kind)
		}
	}

	v := at(t, c, "spec", "versions", "0").(obj)
	if v["name"] != v1alpha1.GroupVersion || v["served"] != true || v["storage"] != true {
		t.Errorf("version = %v served %v storage %v, want %s served and storage", v["name"], v["served"], v["storage"], v1alpha1.GroupVersion)
	}
	if got := v["subresources"]; !reflect.DeepEqual(got, obj{"status": obj{}}) {
		t.Errorf("subresources = %v, want status only", got)
	}
	wantColumns := []any{
		obj{"name": "Provider", "type": "string", "jsonPath": ".spec.cloudProvider"},
		obj{"name": "Digest", "type": "string", "jsonPath": ".status.serving.digest"},
		obj{"name": "Ready", "type": "string", "jsonPath": `.status.conditions[?(@.type=="Ready")].status`},
		obj{"name": "Degraded", "type": "string", "jsonPath": `.status.conditions[?(@.type=="Degraded")].status`, "priority": float64(1)},
		obj{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
	}
	if got := v["additionalPrinterColumns"]; !reflect.DeepEqual(got, wantColumns) {
		t.Errorf("additionalPrinterColumns = %v\nwant %v", got, wantColumns)
	}
	// The condition types the columns filter on are the API's.
	if v1alpha1.ConditionReady != "Ready" || v1alpha1.ConditionDegraded != "Degraded" {
		t.Error("condition type constants changed; update the printer columns")
	}
}

func TestCRDValidation(t *testing.T) {
	root := openAPISchema(t, loadCRD(t))
	spec := at(t, root, "properties", "spec").(obj)
	prop := func(s obj, path ...string) obj {
		t.Helper()
		for _, p := range path {
			s = at(t, s, "properties", p).(obj)
		}
		return s
	}

	// cloudProvider: exactly the names registry.ValidName accepts, which
	// is what the controller registers the module under.
	cp := prop(spec, "cloudProvider")
	re := regexp.MustCompile(fmt.Sprint(cp["pattern"]))
	maxLen := int(cp["maxLength"].(float64))
	for _, name := range []string{
		"hetzner", "a", "0", "aws-v2", "my_provider.eu", "a.b-c_d",
		"", "-a", "a-", "_a", "a_", ".a", "a.", "Hetzner", "a b", "a/b", "ä",
		strings.Repeat("a", 63), strings.Repeat("a", 64),
	} {
		crdOK := re.MatchString(name) && len(name) <= maxLen
		if crdOK != registry.ValidName(name) {
			t.Errorf("cloudProvider %q: CRD accepts %v, registry.ValidName %v", name, crdOK, registry.ValidName(name))
		}
	}

	sha := regexp.MustCompile(fmt.Sprint(prop(spec, "source", "configMap", "sha256")["pattern"]))
	if p := prop(spec, "source", "url", "sha256")["pattern"]; p != sha.String() {
		t.Errorf("url.sha256 pattern %v differs from configMap.sha256's %v", p, sha)
	}
	for s, want := range map[string]bool{
		strings.Repeat("a", 64):                      true,
		"0123456789abcdef" + strings.Repeat("0", 48): true,
		strings.Repeat("A", 64):                      false, // hex is lower case, as sha256sum prints it
		strings.Repeat("a", 63):                      false,
		strings.Repeat("a", 65):                      false,
		"sha256:" + strings.Repeat("a", 64):          false,
	} {
		if sha.MatchString(s) != want {
			t.Errorf("sha256 %q: pattern accepts %v, want %v", s, !want, want)
		}
	}

	enum := prop(spec, "source", "image", "pullPolicy")["enum"]
	if want := []any{string(v1alpha1.PullAlways), string(v1alpha1.PullIfNotPresent)}; !reflect.DeepEqual(enum, want) {
		t.Errorf("pullPolicy enum = %v, want %v", enum, want)
	}
	bounds := []struct {
		path     []string
		min, max any
	}{
		{[]string{"revisionHistoryLimit"}, float64(0), float64(100)},
		{[]string{"pool", "size"}, float64(1), float64(1024)},
		{[]string{"pool", "prewarm"}, float64(0), nil},
		{[]string{"pool", "maxCallsPerInstance"}, float64(-1), nil},
	}
	for _, b := range bounds {
		s := prop(spec, b.path...)
		if s["minimum"] != b.min || s["maximum"] != b.max {
			t.Errorf("%s: minimum %v maximum %v, want %v and %v", strings.Join(b.path, "."), s["minimum"], s["maximum"], b.min, b.max)
		}
	}

	conds := prop(at(t, root, "properties", "status").(obj), "conditions")
	if conds["x-kubernetes-list-type"] != "map" || !reflect.DeepEqual(conds["x-kubernetes-list-map-keys"], []any{"type"}) {
		t.Errorf("conditions: list-type %v keys %v, want map keyed by type", conds["x-kubernetes-list-type"], conds["x-kubernetes-list-map-keys"])
	}

	// The CEL rules are evaluated by an API server, which these tests do
	// not run: they check that each rule is where it must be and says what
	// it must. (An e2e test applying the CRD and refused objects would
	// evaluate them.)
	rules := func(s obj) string {
		var out []string
		for _, r := range s["x-kubernetes-validations"].([]any) {
			out = append(out, fmt.Sprint(r.(obj)["rule"]))
		}
		return strings.Join(out, "\n")
	}
	for _, want := range []struct {
		where []string
		has   []string
	}{
		{nil, []string{"has(self.verify)", "has(self.source.image)"}},
		{[]string{"source"}, []string{"has(self.image)", "has(self.configMap)", "has(self.url)", "size() == 1"}},
		{[]string{"pool"}, []string{"self.prewarm <= self.size"}},
		{[]string{"source", "url", "url"}, []string{`startsWith("https://")`, `127\.0\.0\.1`, "localhost", `\[::1\]`}},
	} {
		s := prop(spec, want.where...)
		if _, ok := s["x-kubernetes-validations"]; !ok {
			t.Errorf("spec.%s: no x-kubernetes-validations", strings.Join(want.where, "."))
			continue
		}
		got := rules(s)
		for _, h := range want.has {
			if !strings.Contains(got, h) {
				t.Errorf("spec.%s: rules %q lack %q", strings.Join(want.where, "."), got, h)
			}
		}
	}
	// The URL rule's loopback part must not be a bare prefix test: the
	// regular expression inside it (RE2, as CEL's matches) is run here.
	urlRule := rules(prop(spec, "source", "url", "url"))
	m := regexp.MustCompile(`matches\(r"([^"]*)"\)`).FindStringSubmatch(urlRule)
	if m == nil {
		t.Fatalf("url rule %q has no matches(r\"…\")", urlRule)
	}
	loopback := regexp.MustCompile(m[1])
	for u, want := range map[string]bool{
		"http://127.0.0.1:8080/hetzner.wasm": true,
		"http://localhost/x.wasm":            true,
		"http://[::1]:9000/x.wasm":           true,
		"http://127.0.0.1":                   true,
		"http://127.0.0.1.example.com/x":     false,
		"http://localhost.example.com/x":     false,
		"http://localhost@example.com/x":     false,
		"http://127.0.0.1:80@example.com/x":  false,
		"http://example.com/x.wasm":          false,
	} {
		if loopback.MatchString(u) != want {
			t.Errorf("url %q: loopback pattern accepts %v, want %v", u, !want, want)
		}
	}
}
