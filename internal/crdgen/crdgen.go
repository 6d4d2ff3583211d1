// Package crdgen writes CustomResourceDefinitions from Go API types: the
// OpenAPI v3 schema from the types by reflection (encoding/json's view of
// them), the descriptions from their doc comments. It does what
// controller-gen does for this project's few types, with no code
// generator to install: a CRD is a function of its types, so it is
// written, not kept in step by hand, and a test checks the files are what
// the types give (controller/crd).
package crdgen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Definition is one CRD: its names and the Go type of its objects.
type Definition struct {
	// Header is the YAML comment the file starts with (lines without #).
	Header string
	// Group, Version, Kind, ListKind, Plural, Singular name the resource.
	Group, Version, Kind, ListKind, Plural, Singular string
	ShortNames, Categories                           []string
	// Namespaced: the scope.
	Namespaced bool
	// Labels are the CRD's own labels (Cluster API's contract label).
	Labels map[string]string
	// StatusSubresource: the resource has a status subresource.
	StatusSubresource bool
	// PrinterColumns are kubectl's columns.
	PrinterColumns []PrinterColumn
	// Object is a value of the resource's Go type.
	Object runtime.Object
	// Docs are the doc comments of the type's package (Docs).
	Docs map[string]string
}

// PrinterColumn is one additionalPrinterColumns entry.
type PrinterColumn struct {
	Name, Type, JSONPath, Description string
	Priority                          int
}

// Docs reads the Go source files and returns the doc comments of their
// types ("WasmMachine") and struct fields ("WasmMachine.Spec"),
// normalised as CRD descriptions: marker lines (+kubebuilder:…) dropped,
// white space collapsed.
func Docs(files ...string) (map[string]string, error) {
	docs := map[string]string{}
	fset := token.NewFileSet()
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				if d := NormaliseDoc(doc.Text()); d != "" {
					docs[ts.Name.Name] = d
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, field := range st.Fields.List {
					if d := NormaliseDoc(field.Doc.Text()); d != "" {
						for _, name := range field.Names {
							docs[ts.Name.Name+"."+name.Name] = d
						}
					}
				}
			}
		}
	}
	return docs, nil
}

// NormaliseDoc is a doc comment as a description: marker lines
// (+kubebuilder:…) dropped, white space collapsed.
func NormaliseDoc(s string) string {
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "+") {
			keep = append(keep, line)
		}
	}
	return strings.Join(strings.Fields(strings.Join(keep, " ")), " ")
}

type obj = map[string]any

// YAML returns the CRD as YAML, keys sorted: the same types always give
// the same bytes.
func (d Definition) YAML() ([]byte, error) {
	t := reflect.TypeOf(d.Object)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("crdgen: %s: Object must be a pointer to a struct, not %s", d.Kind, t)
	}
	g := gen{docs: d.Docs, pkg: t.Elem().PkgPath()}
	schema := g.object(t.Elem())
	if doc := d.Docs[t.Elem().Name()]; doc != "" {
		schema["description"] = doc
	}
	version := obj{"name": d.Version, "served": true, "storage": true,
		"schema": obj{"openAPIV3Schema": schema}}
	if d.StatusSubresource {
		version["subresources"] = obj{"status": obj{}}
	}
	if len(d.PrinterColumns) > 0 {
		var cols []any
		for _, c := range d.PrinterColumns {
			col := obj{"name": c.Name, "type": c.Type, "jsonPath": c.JSONPath}
			if c.Description != "" {
				col["description"] = c.Description
			}
			if c.Priority != 0 {
				col["priority"] = c.Priority
			}
			cols = append(cols, col)
		}
		version["additionalPrinterColumns"] = cols
	}
	names := obj{"kind": d.Kind, "listKind": d.ListKind, "plural": d.Plural, "singular": d.Singular}
	if len(d.ShortNames) > 0 {
		names["shortNames"] = d.ShortNames
	}
	if len(d.Categories) > 0 {
		names["categories"] = d.Categories
	}
	scope := "Cluster"
	if d.Namespaced {
		scope = "Namespaced"
	}
	meta := obj{"name": d.Plural + "." + d.Group}
	if len(d.Labels) > 0 {
		meta["labels"] = d.Labels
	}
	crd := obj{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   meta,
		"spec":       obj{"group": d.Group, "names": names, "scope": scope, "versions": []any{version}},
	}
	body, err := yaml.Marshal(crd)
	if err != nil {
		return nil, err
	}
	var header strings.Builder
	for _, line := range strings.Split(strings.TrimRight(d.Header, "\n"), "\n") {
		header.WriteString(strings.TrimRight("# "+line, " ") + "\n")
	}
	return append([]byte(header.String()), body...), nil
}

// gen builds schemas; docs are those of pkg, the API's own package (a
// type of another package, metav1.Condition, gets no description).
type gen struct {
	docs map[string]string
	pkg  string
}

var (
	timeType      = reflect.TypeFor[metav1.Time]()
	objectMeta    = reflect.TypeFor[metav1.ObjectMeta]()
	typeMeta      = reflect.TypeFor[metav1.TypeMeta]()
	rawExtension  = reflect.TypeFor[runtime.RawExtension]()
	conditionType = reflect.TypeFor[metav1.Condition]()
)

// schema is the schema of a value of type t.
func (g gen) schema(t reflect.Type) obj {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case timeType:
		return obj{"type": "string", "format": "date-time"}
	case objectMeta:
		return obj{"type": "object"}
	case rawExtension:
		return obj{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	}
	switch t.Kind() {
	case reflect.String:
		return obj{"type": "string"}
	case reflect.Bool:
		return obj{"type": "boolean"}
	case reflect.Int32:
		return obj{"type": "integer", "format": "int32"}
	case reflect.Int64:
		return obj{"type": "integer", "format": "int64"}
	case reflect.Int:
		return obj{"type": "integer"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return obj{"type": "string", "format": "byte"}
		}
		s := obj{"type": "array", "items": g.schema(t.Elem())}
		if t.Elem() == conditionType {
			s["x-kubernetes-list-type"] = "map"
			s["x-kubernetes-list-map-keys"] = []any{"type"}
		}
		return s
	case reflect.Map:
		return obj{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Struct:
		return g.object(t)
	}
	panic(fmt.Sprintf("crdgen: no schema for %s", t))
}

// object is the schema of struct t: a property per JSON field, required
// the fields encoding/json always writes (no omitempty, no omitzero).
func (g gen) object(t reflect.Type) obj {
	props := obj{}
	var required []any
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if !f.IsExported() || tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				walk(f.Type)
				continue
			}
			if name == "" {
				name = f.Name
			}
			s := g.schema(f.Type)
			if t.PkgPath() == g.pkg {
				if doc := g.docs[t.Name()+"."+f.Name]; doc != "" {
					s["description"] = doc
				}
			}
			props[name] = s
			o := strings.Split(opts, ",")
			if !slices.Contains(o, "omitempty") && !slices.Contains(o, "omitzero") && !f.Anonymous {
				required = append(required, name)
			}
		}
	}
	walk(t)
	s := obj{"type": "object", "properties": props}
	if len(required) > 0 && !hasTypeMeta(t) {
		s["required"] = required
	} else if hasTypeMeta(t) {
		// An object's metadata and status are written by the API server
		// and the controller; only spec may be required.
		var r []any
		for _, n := range required {
			if n == "spec" {
				r = append(r, n)
			}
		}
		if len(r) > 0 {
			s["required"] = r
		}
	}
	return s
}

func hasTypeMeta(t reflect.Type) bool {
	for i := range t.NumField() {
		if t.Field(i).Type == typeMeta {
			return true
		}
	}
	return false
}
