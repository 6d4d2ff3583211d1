package v1alpha1_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"

	"github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/testing/apitest"
)

// manifest is one testdata file, converted to JSON the way kubectl and
// client-go do it (sigs.k8s.io/yaml).
type manifest struct {
	name string
	yaml []byte
	json []byte
	gvk  schema.GroupVersionKind
}

func loadManifests(t *testing.T) []manifest {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("expected at least 5 testdata manifests, found %d", len(files))
	}
	var out []manifest
	for _, f := range files {
		y, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(y)
		if err != nil {
			t.Fatalf("%s: YAML to JSON: %v", f, err)
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(j, &tm); err != nil {
			t.Fatalf("%s: reading apiVersion/kind: %v", f, err)
		}
		out = append(out, manifest{name: filepath.Base(f), yaml: y, json: j, gvk: tm.GroupVersionKind()})
	}
	return out
}

// strictDecode decodes exactly one JSON document into obj, failing on any
// field obj's type does not have.
func strictDecode(data []byte, obj any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after JSON document")
	}
	return nil
}

// rawExtensionPaths lists where a kind carries runtime.RawExtension values
// (provider spec, provider status) whose bytes must survive untouched.
func rawExtensionPaths(t *testing.T, m manifest) [][]string {
	t.Helper()
	machinePaths := func(prefix ...string) [][]string {
		return [][]string{
			append(append([]string{}, prefix...), "spec", "providerSpec", "value"),
			append(append([]string{}, prefix...), "status", "providerStatus"),
		}
	}
	switch m.gvk.Kind {
	case "Machine":
		return machinePaths()
	case "MachineSet", "MachineDeployment":
		return [][]string{{"spec", "template", "spec", "providerSpec", "value"}}
	case "MachineList":
		var items []json.RawMessage
		if err := json.Unmarshal(rawAt(t, m.json, "items"), &items); err != nil {
			t.Fatal(err)
		}
		var paths [][]string
		for i := range items {
			paths = append(paths, machinePaths("items", strconv.Itoa(i))...)
		}
		return paths
	}
	t.Fatalf("%s: no RawExtension paths known for kind %q", m.name, m.gvk.Kind)
	return nil
}

// TestManifestsRoundTripJSON decodes every manifest strictly into its typed
// object with encoding/json, encodes it again and requires the result to be
// the same JSON document: no field lost, none added, none changed.
func TestManifestsRoundTripJSON(t *testing.T) {
	scheme := apitest.Scheme(t, v1alpha1.AddToScheme)
	for _, m := range loadManifests(t) {
		t.Run(m.name, func(t *testing.T) {
			if m.gvk.GroupVersion() != v1alpha1.SchemeGroupVersion {
				t.Fatalf("apiVersion = %q, want %q", m.gvk.GroupVersion(), v1alpha1.SchemeGroupVersion)
			}
			obj, err := scheme.New(m.gvk)
			if err != nil {
				t.Fatalf("scheme does not know %v: %v", m.gvk, err)
			}
			if err := strictDecode(m.json, obj); err != nil {
				t.Fatalf("strict decode into %T: %v", obj, err)
			}
			out, err := json.Marshal(obj)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			assertSameJSON(t, m.json, out)

			// Provider specs and statuses are RawExtensions: beyond semantic
			// equality, their bytes (key order included) must be exactly
			// what was read.
			found := 0
			for _, path := range rawExtensionPaths(t, m) {
				orig := rawAt(t, m.json, path...)
				if orig == nil {
					continue
				}
				found++
				if got := rawAt(t, out, path...); !bytes.Equal(orig, got) {
					t.Errorf("%v: raw bytes changed\nwant: %s\ngot:  %s", path, orig, got)
				}
			}
			if m.gvk.Kind != "MachineList" && found == 0 {
				t.Errorf("manifest has no providerSpec.value; the RawExtension check did not run")
			}
		})
	}
}

// TestManifestsRoundTripCodec does the same through apimachinery's codec
// factory, which is what client-go uses: it must detect the group, version
// and kind from the document, pick the registered Go type, reject nothing
// in strict mode, and encode back to the same document.
func TestManifestsRoundTripCodec(t *testing.T) {
	scheme := apitest.Scheme(t, v1alpha1.AddToScheme)
	codecs := serializer.NewCodecFactory(scheme, serializer.EnableStrict)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer in codec factory")
	}
	encoder := codecs.EncoderForVersion(info.Serializer, v1alpha1.SchemeGroupVersion)

	wantTypes := map[string]reflect.Type{
		"Machine":           reflect.TypeFor[*v1alpha1.Machine](),
		"MachineList":       reflect.TypeFor[*v1alpha1.MachineList](),
		"MachineSet":        reflect.TypeFor[*v1alpha1.MachineSet](),
		"MachineDeployment": reflect.TypeFor[*v1alpha1.MachineDeployment](),
	}

	for _, m := range loadManifests(t) {
		t.Run(m.name, func(t *testing.T) {
			// Both the JSON and the original YAML must decode; the
			// universal deserializer sniffs the format.
			for format, data := range map[string][]byte{"json": m.json, "yaml": m.yaml} {
				obj, gvk, err := codecs.UniversalDeserializer().Decode(data, nil, nil)
				if err != nil {
					t.Fatalf("%s: decode: %v", format, err)
				}
				if want := v1alpha1.SchemeGroupVersion.WithKind(m.gvk.Kind); *gvk != want {
					t.Errorf("%s: detected GVK %v, want %v", format, *gvk, want)
				}
				if got, want := reflect.TypeOf(obj), wantTypes[m.gvk.Kind]; got != want {
					t.Fatalf("%s: decoded into %v, want %v", format, got, want)
				}
				out, err := runtime.Encode(encoder, obj)
				if err != nil {
					t.Fatalf("%s: encode: %v", format, err)
				}
				assertSameJSON(t, m.json, out)
			}

			// runtime.Decode is the helper most callers use.
			obj, err := runtime.Decode(codecs.UniversalDeserializer(), m.json)
			if err != nil {
				t.Fatalf("runtime.Decode: %v", err)
			}
			kinds, _, err := scheme.ObjectKinds(obj)
			if err != nil || len(kinds) != 1 || kinds[0] != m.gvk {
				t.Errorf("scheme.ObjectKinds = %v, %v; want [%v]", kinds, err, m.gvk)
			}
		})
	}
}

func TestMachineDecodedValues(t *testing.T) {
	// Round-trip equality alone would pass if a field were decoded into the
	// wrong Go field with the same JSON name; spot-check typed values.
	scheme := apitest.Scheme(t, v1alpha1.AddToScheme)
	codecs := serializer.NewCodecFactory(scheme)
	data, err := os.ReadFile(filepath.Join("testdata", "running-machine.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := runtime.Decode(codecs.UniversalDeserializer(), data)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := obj.(*v1alpha1.Machine)
	if !ok {
		t.Fatalf("decoded %T, want *v1alpha1.Machine", obj)
	}
	if m.Kind != "Machine" || m.APIVersion != "cluster.k8s.io/v1alpha1" {
		t.Errorf("TypeMeta = %+v", m.TypeMeta)
	}
	if m.Spec.ProviderID == nil || *m.Spec.ProviderID != "hcloud://58123977" {
		t.Errorf("spec.providerID = %v", m.Spec.ProviderID)
	}
	if m.Spec.Versions.Kubelet != "1.31.4" {
		t.Errorf("spec.versions.kubelet = %q", m.Spec.Versions.Kubelet)
	}
	if m.Spec.Labels["pool"] != "general" {
		t.Errorf("spec.metadata.labels = %v", m.Spec.Labels)
	}
	if m.Status.ErrorReason == nil || *m.Status.ErrorReason != v1alpha1.DeleteMachineError {
		t.Errorf("status.errorReason = %v, want %q", m.Status.ErrorReason, v1alpha1.DeleteMachineError)
	}
	if m.Status.NodeRef == nil || m.Status.NodeRef.Name != "hetzner-workers-5d8f7c9b6-xk2lq" || m.Status.NodeRef.Kind != "Node" {
		t.Errorf("status.nodeRef = %+v", m.Status.NodeRef)
	}
	if len(m.Status.Addresses) != 4 || m.Status.Addresses[1].Address != "203.0.113.27" {
		t.Errorf("status.addresses = %+v", m.Status.Addresses)
	}
	if len(m.Status.Conditions) != 2 || m.Status.Conditions[0].Reason != "KubeletReady" {
		t.Errorf("status.conditions = %+v", m.Status.Conditions)
	}
	if m.Status.LastOperation == nil || m.Status.LastOperation.State == nil || *m.Status.LastOperation.State != "Failed" {
		t.Errorf("status.lastOperation = %+v", m.Status.LastOperation)
	}
	if m.DeletionTimestamp == nil || m.DeletionTimestamp.UTC().Format("2006-01-02T15:04:05Z") != "2025-02-20T16:00:42Z" {
		t.Errorf("metadata.deletionTimestamp = %v", m.DeletionTimestamp)
	}
	if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].Kind != "MachineSet" || m.OwnerReferences[0].Controller == nil || !*m.OwnerReferences[0].Controller {
		t.Errorf("metadata.ownerReferences = %+v", m.OwnerReferences)
	}
	if len(m.ManagedFields) != 2 || m.ManagedFields[1].Subresource != "status" {
		t.Errorf("metadata.managedFields = %+v", m.ManagedFields)
	}
}

func TestUnknownFieldsAreDetected(t *testing.T) {
	// The strict checks in the round-trip tests must be able to fail: a
	// field that Machine does not have is reported by both decoders, while
	// the same field inside providerSpec.value (a RawExtension) is fine.
	const bogus = `{"apiVersion":"cluster.k8s.io/v1alpha1","kind":"Machine","metadata":{"name":"m"},` +
		`"spec":{"providerSpec":{"value":{"anything":1}},"versions":{"kubelet":"1.31.4"},"bogusField":true},"status":{}}`

	var m v1alpha1.Machine
	if err := strictDecode([]byte(bogus), &m); err == nil {
		t.Error("strict encoding/json decode accepted spec.bogusField")
	}

	codecs := serializer.NewCodecFactory(apitest.Scheme(t, v1alpha1.AddToScheme), serializer.EnableStrict)
	_, _, err := codecs.UniversalDeserializer().Decode([]byte(bogus), nil, nil)
	if !runtime.IsStrictDecodingError(err) {
		t.Errorf("strict codec: got error %v, want a strict decoding error", err)
	}

	const ok = `{"apiVersion":"cluster.k8s.io/v1alpha1","kind":"Machine","metadata":{"name":"m"},` +
		`"spec":{"providerSpec":{"value":{"anything":1}},"versions":{"kubelet":"1.31.4"}},"status":{}}`
	if err := strictDecode([]byte(ok), &m); err != nil {
		t.Errorf("strict decode rejected unknown field inside the RawExtension: %v", err)
	}
}

func TestProviderSpecValueKeepsExactBytes(t *testing.T) {
	// Keys deliberately out of alphabetical order and with odd spacing: a
	// re-marshalled map would sort them, a RawExtension must not.
	const value = `{"zeta": 1,  "alpha": {"y": [3, 2, 1], "b": "<&>"}, "mid": 1.50}`
	doc := []byte(`{"apiVersion":"cluster.k8s.io/v1alpha1","kind":"Machine","metadata":{"name":"m"},` +
		`"spec":{"metadata":{},"providerSpec":{"value":` + value + `},"versions":{"kubelet":""}},"status":{}}`)

	var m v1alpha1.Machine
	if err := strictDecode(doc, &m); err != nil {
		t.Fatal(err)
	}
	if m.Spec.ProviderSpec.Value == nil || string(m.Spec.ProviderSpec.Value.Raw) != value {
		t.Fatalf("decoded Raw = %q, want exactly %q", m.Spec.ProviderSpec.Value.Raw, value)
	}
	out, err := json.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	// encoding/json compacts (and HTML-escapes) a RawExtension's bytes but
	// keeps their order and number spelling.
	var want bytes.Buffer
	if err := json.Compact(&want, []byte(value)); err != nil {
		t.Fatal(err)
	}
	wantStr := `{"zeta":1,"alpha":{"y":[3,2,1],"b":"\u003c\u0026\u003e"},"mid":1.50}`
	if got := rawAt(t, out, "spec", "providerSpec", "value"); string(got) != wantStr {
		t.Errorf("re-encoded value = %s, want %s", got, wantStr)
	}
	assertSameJSON(t, doc, out)
}

// TestUpstreamCanonicalFormDifferences pins down, for two documents in
// the form upstream publishes them, exactly which keys change on a round
// trip. None of them carries information: they are empty objects that the
// types always emit, false/zero values they omit, and the zero
// creationTimestamp that upstream (built against an older apimachinery)
// writes as null while apimachinery v0.37 omits it.
func TestUpstreamCanonicalFormDifferences(t *testing.T) {
	tests := []struct {
		name      string
		yaml      string
		wantDiffs []string
	}{
		{
			// Shape of upstream's conversions testdata
			// (migrated_clusterv1alpha1machineWithProviderConfig/hetzner.yaml).
			name: "machine written by upstream machine-controller",
			yaml: `
apiVersion: cluster.k8s.io/v1alpha1
kind: Machine
metadata:
  creationTimestamp: null
  name: hetzner-machine
  namespace: kube-system
spec:
  metadata:
    creationTimestamp: null
  providerSpec:
    value:
      cloudProvider: hetzner
      cloudProviderSpec:
        datacenter: ""
        location: fsn1
        serverType: cx22
        token: secret
      operatingSystem: ubuntu
      operatingSystemSpec:
        disableAutoUpdate: true
        distUpgradeOnBoot: false
      sshPublicKeys:
      - ssh-ed25519 AAAA
  versions:
    kubelet: 1.31.4
status: {}
`,
			wantDiffs: []string{"-metadata.creationTimestamp", "-spec.metadata.creationTimestamp"},
		},
		{
			// Shape of upstream's examples/*-machinedeployment.yaml, written
			// by hand.
			name: "hand-written machinedeployment",
			yaml: `
apiVersion: "cluster.k8s.io/v1alpha1"
kind: MachineDeployment
metadata:
  name: hetzner-machinedeployment
  namespace: kube-system
spec:
  paused: false
  replicas: 1
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 1
      maxUnavailable: 0
  minReadySeconds: 0
  selector:
    matchLabels:
      foo: bar
  template:
    metadata:
      labels:
        foo: bar
    spec:
      providerSpec:
        value:
          cloudProvider: "hetzner"
      versions:
        kubelet: 1.31.4
`,
			wantDiffs: []string{"+spec.template.spec.metadata", "+status", "-spec.paused"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := yaml.YAMLToJSON([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			obj, _, err := serializer.NewCodecFactory(apitest.Scheme(t, v1alpha1.AddToScheme), serializer.EnableStrict).
				UniversalDeserializer().Decode(j, nil, nil)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			out, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			diffs := jsonDiff(decodeGeneric(t, j), decodeGeneric(t, out))
			if !reflect.DeepEqual(diffs, tt.wantDiffs) {
				t.Errorf("round-trip differences = %q, want %q", diffs, tt.wantDiffs)
			}
		})
	}
}

func TestSchemeRegistration(t *testing.T) {
	scheme := apitest.Scheme(t, v1alpha1.AddToScheme)
	for kind, want := range map[string]reflect.Type{
		"Machine":               reflect.TypeFor[v1alpha1.Machine](),
		"MachineList":           reflect.TypeFor[v1alpha1.MachineList](),
		"MachineSet":            reflect.TypeFor[v1alpha1.MachineSet](),
		"MachineSetList":        reflect.TypeFor[v1alpha1.MachineSetList](),
		"MachineDeployment":     reflect.TypeFor[v1alpha1.MachineDeployment](),
		"MachineDeploymentList": reflect.TypeFor[v1alpha1.MachineDeploymentList](),
		"MachineClass":          reflect.TypeFor[v1alpha1.MachineClass](),
		"MachineClassList":      reflect.TypeFor[v1alpha1.MachineClassList](),
	} {
		gvk := schema.GroupVersionKind{Group: "cluster.k8s.io", Version: "v1alpha1", Kind: kind}
		if got := scheme.AllKnownTypes()[gvk]; got != want {
			t.Errorf("scheme type for %v = %v, want %v", gvk, got, want)
		}
	}
	// metav1.AddToGroupVersion registers the option and status types that
	// client-go needs to list, watch and delete in this group version.
	for _, kind := range []string{"ListOptions", "DeleteOptions", "GetOptions", "WatchEvent"} {
		if !scheme.Recognizes(v1alpha1.SchemeGroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not recognise %s in %v", kind, v1alpha1.SchemeGroupVersion)
		}
	}
	if unversioned, registered := scheme.IsUnversioned(&metav1.Status{}); !unversioned || !registered {
		t.Error("metav1.Status is not registered as an unversioned type")
	}

	if got := v1alpha1.Kind("Machine"); got != (schema.GroupKind{Group: "cluster.k8s.io", Kind: "Machine"}) {
		t.Errorf("Kind(Machine) = %v", got)
	}
	if got := v1alpha1.Resource("machinedeployments"); got != (schema.GroupResource{Group: "cluster.k8s.io", Resource: "machinedeployments"}) {
		t.Errorf("Resource(machinedeployments) = %v", got)
	}
	if v1alpha1.GroupName != "cluster.k8s.io" || v1alpha1.SchemeGroupVersion.String() != "cluster.k8s.io/v1alpha1" {
		t.Errorf("group version = %v", v1alpha1.SchemeGroupVersion)
	}
}

func TestMachineStatusErrorValues(t *testing.T) {
	// These strings are stored in status.errorReason by machine-controller;
	// they must not drift.
	for got, want := range map[v1alpha1.MachineStatusError]string{
		v1alpha1.InvalidConfigurationMachineError:  "InvalidConfiguration",
		v1alpha1.UnsupportedChangeMachineError:     "UnsupportedChange",
		v1alpha1.InsufficientResourcesMachineError: "InsufficientResources",
		v1alpha1.CreateMachineError:                "CreateError",
		v1alpha1.UpdateMachineError:                "UpdateError",
		v1alpha1.DeleteMachineError:                "DeleteError",
		v1alpha1.JoinClusterTimeoutMachineError:    "JoinClusterTimeoutError",
	} {
		if string(got) != want {
			t.Errorf("constant = %q, want %q", got, want)
		}
	}
	if v1alpha1.InvalidConfigurationMachineSetError != "InvalidConfiguration" ||
		v1alpha1.RollingUpdateMachineDeploymentStrategyType != "RollingUpdate" {
		t.Error("MachineSet/MachineDeployment constants drifted")
	}
}
