package v1alpha1_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
)

// upstreamField is one field of a struct in machine-controller's
// sdk/apis/cluster/v1alpha1 (v1.66.2), as its source declares it: Go
// name, JSON name and options from the json tag, and the type's shape.
// A shape names the type as written upstream, with the package qualifier
// kept for Kubernetes' packages and dropped for upstream's own (the
// cluster API's named types live in its v1alpha1 and common packages,
// here in v1alpha1 alone); "embed " marks an embedded field.
type upstreamField struct {
	Go, JSON, Opts, Shape string
}

// upstreamFields is machine-controller's published API, written from its
// source (sdk/apis/cluster/v1alpha1/*_types.go and common_types.go) as a
// table: the facts, no code.
var upstreamFields = map[string][]upstreamField{
	"Machine": {
		{"TypeMeta", "", "inline", "embed metav1.TypeMeta"},
		{"ObjectMeta", "metadata", "omitempty", "embed metav1.ObjectMeta"},
		{"Spec", "spec", "omitempty", "MachineSpec"},
		{"Status", "status", "omitempty", "MachineStatus"},
	},
	"MachineSpec": {
		{"ObjectMeta", "metadata", "omitempty", "embed metav1.ObjectMeta"},
		{"Taints", "taints", "omitempty", "[]v1.Taint"},
		{"ProviderSpec", "providerSpec", "", "ProviderSpec"},
		{"Versions", "versions", "omitempty", "MachineVersionInfo"},
		{"ConfigSource", "configSource", "omitempty", "*v1.NodeConfigSource"},
		{"ProviderID", "providerID", "omitempty", "*string"},
	},
	"MachineStatus": {
		{"NodeRef", "nodeRef", "omitempty", "*v1.ObjectReference"},
		{"LastUpdated", "lastUpdated", "omitempty", "*metav1.Time"},
		{"Versions", "versions", "omitempty", "*MachineVersionInfo"},
		{"ErrorReason", "errorReason", "omitempty", "*MachineStatusError"},
		{"ErrorMessage", "errorMessage", "omitempty", "*string"},
		{"ProviderStatus", "providerStatus", "omitempty", "*runtime.RawExtension"},
		{"Addresses", "addresses", "omitempty", "[]v1.NodeAddress"},
		{"Conditions", "conditions", "omitempty", "[]v1.NodeCondition"},
		{"LastOperation", "lastOperation", "omitempty", "*LastOperation"},
		{"Phase", "phase", "omitempty", "*string"},
	},
	"LastOperation": {
		{"Description", "description", "omitempty", "*string"},
		{"LastUpdated", "lastUpdated", "omitempty", "*metav1.Time"},
		{"State", "state", "omitempty", "*string"},
		{"Type", "type", "omitempty", "*string"},
	},
	"MachineVersionInfo": {
		{"Kubelet", "kubelet", "", "string"},
		{"ControlPlane", "controlPlane", "omitempty", "string"},
	},
	"MachineList": {
		{"TypeMeta", "", "inline", "embed metav1.TypeMeta"},
		{"ListMeta", "metadata", "omitempty", "embed metav1.ListMeta"},
		{"Items", "items", "", "[]Machine"},
	},
	"ProviderSpec": {
		{"Value", "value", "omitempty", "*runtime.RawExtension"},
		{"ValueFrom", "valueFrom", "omitempty", "*ProviderSpecSource"},
	},
	"ProviderSpecSource": {
		{"MachineClass", "machineClass", "omitempty", "*MachineClassRef"},
	},
	"MachineClassRef": {
		{"ObjectReference", "", "inline", "embed *v1.ObjectReference"},
		{"Provider", "provider", "omitempty", "string"},
	},
	"MachineClass": {
		{"TypeMeta", "", "inline", "embed metav1.TypeMeta"},
		{"ObjectMeta", "metadata", "omitempty", "embed metav1.ObjectMeta"},
		{"ProviderSpec", "providerSpec", "", "runtime.RawExtension"},
	},
	"MachineClassList": {
		{"TypeMeta", "", "inline", "embed metav1.TypeMeta"},
		{"ListMeta", "metadata", "omitempty", "embed metav1.ListMeta"},
		{"Items", "items", "", "[]MachineClass"},
	},
	"MachineDeployment": {
		{"TypeMeta", "", "inline", "embed metav1.TypeMeta"},
		{"ObjectMeta", "metadata", "omitempty", "embed metav1.ObjectMeta"},
		{"Spec", "spec", "omitempty", "MachineDeploymentSpec"},
		{"Status", "status", "omitempty", "MachineDeploymentStatus"},
	},
	"MachineDeploymentSpec": {
		{"Replicas", "replicas", "omitempty", "*int32"},
		{"Selector", "selector", "", "metav1.LabelSelector"},
		{"Template", "template", "", "MachineTemplateSpec"},
		{"Strategy", "strategy", "omitempty", "*MachineDeploymentStrategy"},
		{"MinReadySeconds", "minReadySeconds", "omitempty", "*int32"},
		{"RevisionHistoryLimit", "revisionHistoryLimit", "omitempty", "*int32"},
		{"Paused", "paused", "omitempty", "bool"},
		{"ProgressDeadlineSeconds", "progressDeadlineSeconds", "omitempty", "*int32"},
	},
	"MachineDeploymentStrategy": {
		{"Type", "type", "omitempty", "MachineDeploymentStrategyType"},
		{"RollingUpdate", "rollingUpdate", "omitempty", "*MachineRollingUpdateDeployment"},
	},
	"MachineRollingUpdateDeployment": {
		{"MaxUnavailable", "maxUnavailable", "omitempty", "*intstr.IntOrString"},
		{"MaxSurge", "maxSurge", "omitempty", "*intstr.IntOrString"},
	},
	"MachineDeploymentStatus": {
		{"ObservedGeneration", "observedGeneration", "omitempty", "int64"},
		{"Replicas", "replicas", "omitempty", "int32"},
		{"UpdatedReplicas", "updatedReplicas", "omitempty", "int32"},
		{"ReadyReplicas", "readyReplicas", "omitempty", "int32"},
		{"AvailableReplicas", "availableReplicas", "omitempty", "int32"},
		{"UnavailableReplicas", "unavailableReplicas", "omitempty", "int32"},
	},
	"MachineDeploymentList": {
		{"TypeMeta", "", "inline", "embed metav1.TypeMeta"},
		{"ListMeta", "metadata", "omitempty", "embed metav1.ListMeta"},
		{"Items", "items", "", "[]MachineDeployment"},
	},
	"MachineSet": {
		{"TypeMeta", "", "inline", "embed metav1.TypeMeta"},
		{"ObjectMeta", "metadata", "omitempty", "embed metav1.ObjectMeta"},
		{"Spec", "spec", "omitempty", "MachineSetSpec"},
		{"Status", "status", "omitempty", "MachineSetStatus"},
	},
	"MachineSetSpec": {
		{"Replicas", "replicas", "omitempty", "*int32"},
		{"MinReadySeconds", "minReadySeconds", "omitempty", "int32"},
		{"DeletePolicy", "deletePolicy", "omitempty", "string"},
		{"Selector", "selector", "", "metav1.LabelSelector"},
		{"Template", "template", "omitempty", "MachineTemplateSpec"},
	},
	"MachineTemplateSpec": {
		{"ObjectMeta", "metadata", "omitempty", "embed metav1.ObjectMeta"},
		{"Spec", "spec", "omitempty", "MachineSpec"},
	},
	"MachineSetStatus": {
		{"Replicas", "replicas", "", "int32"},
		{"FullyLabeledReplicas", "fullyLabeledReplicas", "omitempty", "int32"},
		{"ReadyReplicas", "readyReplicas", "omitempty", "int32"},
		{"AvailableReplicas", "availableReplicas", "omitempty", "int32"},
		{"ObservedGeneration", "observedGeneration", "omitempty", "int64"},
		{"ErrorReason", "errorReason", "omitempty", "*MachineSetStatusError"},
		{"ErrorMessage", "errorMessage", "omitempty", "*string"},
	},
	"MachineSetList": {
		{"TypeMeta", "", "inline", "embed metav1.TypeMeta"},
		{"ListMeta", "metadata", "omitempty", "embed metav1.ListMeta"},
		{"Items", "items", "", "[]MachineSet"},
	},
}

// ourTypes are the structs the table describes, by name.
var ourTypes = map[string]reflect.Type{
	"Machine":                        reflect.TypeFor[v1alpha1.Machine](),
	"MachineSpec":                    reflect.TypeFor[v1alpha1.MachineSpec](),
	"MachineStatus":                  reflect.TypeFor[v1alpha1.MachineStatus](),
	"LastOperation":                  reflect.TypeFor[v1alpha1.LastOperation](),
	"MachineVersionInfo":             reflect.TypeFor[v1alpha1.MachineVersionInfo](),
	"MachineList":                    reflect.TypeFor[v1alpha1.MachineList](),
	"ProviderSpec":                   reflect.TypeFor[v1alpha1.ProviderSpec](),
	"ProviderSpecSource":             reflect.TypeFor[v1alpha1.ProviderSpecSource](),
	"MachineClassRef":                reflect.TypeFor[v1alpha1.MachineClassRef](),
	"MachineClass":                   reflect.TypeFor[v1alpha1.MachineClass](),
	"MachineClassList":               reflect.TypeFor[v1alpha1.MachineClassList](),
	"MachineDeployment":              reflect.TypeFor[v1alpha1.MachineDeployment](),
	"MachineDeploymentSpec":          reflect.TypeFor[v1alpha1.MachineDeploymentSpec](),
	"MachineDeploymentStrategy":      reflect.TypeFor[v1alpha1.MachineDeploymentStrategy](),
	"MachineRollingUpdateDeployment": reflect.TypeFor[v1alpha1.MachineRollingUpdateDeployment](),
	"MachineDeploymentStatus":        reflect.TypeFor[v1alpha1.MachineDeploymentStatus](),
	"MachineDeploymentList":          reflect.TypeFor[v1alpha1.MachineDeploymentList](),
	"MachineSet":                     reflect.TypeFor[v1alpha1.MachineSet](),
	"MachineSetSpec":                 reflect.TypeFor[v1alpha1.MachineSetSpec](),
	"MachineTemplateSpec":            reflect.TypeFor[v1alpha1.MachineTemplateSpec](),
	"MachineSetStatus":               reflect.TypeFor[v1alpha1.MachineSetStatus](),
	"MachineSetList":                 reflect.TypeFor[v1alpha1.MachineSetList](),
}

// The package's structs match upstream's field for field: every field of
// ours is in the table with the same JSON name, options and shape, and
// every field of the table is ours.
func TestFieldsMatchUpstream(t *testing.T) {
	for name, want := range upstreamFields {
		typ, ok := ourTypes[name]
		if !ok {
			t.Errorf("%s: in upstream's table but not checked here", name)
			continue
		}
		got := fieldsOf(typ)
		for _, f := range want {
			i := slices.IndexFunc(got, func(g upstreamField) bool { return g.Go == f.Go })
			switch {
			case i < 0:
				t.Errorf("%s.%s: upstream has it (json %q), ours does not", name, f.Go, f.JSON)
			case got[i] != f:
				t.Errorf("%s.%s: ours %+v, upstream %+v", name, f.Go, got[i], f)
			}
		}
		for _, g := range got {
			if !slices.ContainsFunc(want, func(f upstreamField) bool { return f.Go == g.Go }) {
				t.Errorf("%s.%s: ours has it (json %q), upstream does not", name, g.Go, g.JSON)
			}
		}
	}
}

// Every struct the package declares is in the table, so a new type
// cannot escape the comparison.
func TestEveryStructInUpstreamTable(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var structs []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if _, ok := ts.Type.(*ast.StructType); ok && ts.Name.IsExported() {
					structs = append(structs, ts.Name.Name)
				}
			}
			return true
		})
	}
	sort.Strings(structs)
	if len(structs) < len(upstreamFields) {
		t.Fatalf("found %d structs, fewer than the table's %d: %v", len(structs), len(upstreamFields), structs)
	}
	for _, s := range structs {
		if _, ok := upstreamFields[s]; !ok {
			t.Errorf("struct %s is not in the upstream table", s)
		}
	}
}

// The comparison itself can fail: a changed tag, option or shape is seen.
func TestFieldsOfSeesDifferences(t *testing.T) {
	type probe struct {
		A string  `json:"a,omitempty"`
		B *int32  `json:"b"`
		C []int64 `json:"-"`
		v1alpha1.MachineVersionInfo
	}
	got := fmt.Sprint(fieldsOf(reflect.TypeFor[probe]()))
	want := "[{A a omitempty string} {B b  *int32} {C -  []int64} {MachineVersionInfo   embed MachineVersionInfo}]"
	if got != want {
		t.Fatalf("fieldsOf = %s, want %s", got, want)
	}
}

// fieldsOf describes typ's fields in the table's terms.
func fieldsOf(typ reflect.Type) []upstreamField {
	var out []upstreamField
	for i := range typ.NumField() {
		sf := typ.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		shape := shapeOf(sf.Type)
		if sf.Anonymous {
			shape = "embed " + shape
		}
		out = append(out, upstreamField{Go: sf.Name, JSON: name, Opts: opts, Shape: shape})
	}
	return out
}

// shapeOf writes t as the table does: Kubernetes' types qualified by
// their package name (v1 for k8s.io/api/core/v1, which upstream imports
// as corev1; metav1 for meta/v1, to tell the two apart), this package's
// types unqualified.
func shapeOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + shapeOf(t.Elem())
	case reflect.Slice:
		return "[]" + shapeOf(t.Elem())
	case reflect.Map:
		return "map[" + shapeOf(t.Key()) + "]" + shapeOf(t.Elem())
	}
	switch t.PkgPath() {
	case "":
		return t.Name()
	case reflect.TypeFor[v1alpha1.Machine]().PkgPath():
		return t.Name()
	case "k8s.io/apimachinery/pkg/apis/meta/v1":
		return "metav1." + t.Name()
	}
	return t.String() // package name qualified: v1.Taint, runtime.RawExtension, intstr.IntOrString
}
