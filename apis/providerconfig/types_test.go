package providerconfig_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/apis/providerconfig"
)

// loadMachine reads one of the cluster/v1alpha1 testdata manifests, so the
// provider config is checked on the very documents the Machine round-trip
// tests use.
func loadMachine(t *testing.T, name string) *v1alpha1.Machine {
	t.Helper()
	y, err := os.ReadFile(filepath.Join("..", "cluster", "v1alpha1", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var m v1alpha1.Machine
	if err := yaml.UnmarshalStrict(y, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if m.Spec.ProviderSpec.Value == nil {
		t.Fatalf("%s: no providerSpec.value", name)
	}
	return &m
}

// hetznerSpec mirrors upstream sdk/cloudprovider/hetzner/types.go RawConfig;
// it lives in the test only, to check ConfigVars in their real context.
type hetznerSpec struct {
	Token                providerconfig.ConfigVarString   `json:"token,omitempty"`
	ServerType           providerconfig.ConfigVarString   `json:"serverType"`
	Datacenter           providerconfig.ConfigVarString   `json:"datacenter"`
	Image                providerconfig.ConfigVarString   `json:"image"`
	Location             providerconfig.ConfigVarString   `json:"location"`
	PlacementGroupPrefix providerconfig.ConfigVarString   `json:"placementGroupPrefix"`
	Networks             []providerconfig.ConfigVarString `json:"networks"`
	Firewalls            []providerconfig.ConfigVarString `json:"firewalls"`
	Labels               map[string]string                `json:"labels,omitempty"`
	AssignPublicIPv4     providerconfig.ConfigVarBool     `json:"assignPublicIPv4,omitempty"`
	AssignPublicIPv6     providerconfig.ConfigVarBool     `json:"assignPublicIPv6,omitempty"`
}

func TestHetznerProviderSpec(t *testing.T) {
	m := loadMachine(t, "hetzner-machine.yaml")
	cfg, err := providerconfig.GetConfig(m.Spec.ProviderSpec.Value)
	if err != nil {
		t.Fatalf("GetConfig: %v", err)
	}

	if cfg.CloudProvider != providerconfig.CloudProviderHetzner {
		t.Errorf("cloudProvider = %q", cfg.CloudProvider)
	}
	if cfg.OperatingSystem != providerconfig.OperatingSystemUbuntu {
		t.Errorf("operatingSystem = %q", cfg.OperatingSystem)
	}
	if err := cfg.OperatingSystem.Validate(); err != nil {
		t.Errorf("Validate(%q): %v", cfg.OperatingSystem, err)
	}
	if len(cfg.SSHPublicKeys) != 1 || !strings.HasPrefix(cfg.SSHPublicKeys[0], "ssh-ed25519 AAAAC3") {
		t.Errorf("sshPublicKeys = %q", cfg.SSHPublicKeys)
	}
	if cfg.CAPublicKey != "" || cfg.Network != nil || cfg.OverwriteCloudConfig != nil {
		t.Errorf("unexpected optional fields: caPublicKey=%q network=%v overwriteCloudConfig=%v",
			cfg.CAPublicKey, cfg.Network, cfg.OverwriteCloudConfig)
	}

	var osSpec struct {
		DistUpgradeOnBoot bool `json:"distUpgradeOnBoot"`
		DisableAutoUpdate bool `json:"disableAutoUpdate"`
	}
	if err := json.Unmarshal(cfg.OperatingSystemSpec.Raw, &osSpec); err != nil {
		t.Fatal(err)
	}
	if osSpec.DistUpgradeOnBoot || !osSpec.DisableAutoUpdate {
		t.Errorf("operatingSystemSpec = %+v", osSpec)
	}

	// The manifest carries a field upstream's Hetzner provider does not know
	// (x-wasmprov-future-field); decode leniently here.
	var spec hetznerSpec
	if err := json.Unmarshal(cfg.CloudProviderSpec.Raw, &spec); err != nil {
		t.Fatalf("decoding cloudProviderSpec: %v", err)
	}
	wantToken := providerconfig.ConfigVarString{SecretKeyRef: secretRef("kube-system", "machine-controller-hetzner", "token")}
	if !reflect.DeepEqual(spec.Token, wantToken) {
		t.Errorf("token = %+v, want %+v", spec.Token, wantToken)
	}
	for field, got := range map[string]string{
		"serverType":           spec.ServerType.Value,
		"datacenter":           spec.Datacenter.Value,
		"location":             spec.Location.Value,
		"image":                spec.Image.Value,
		"placementGroupPrefix": spec.PlacementGroupPrefix.Value,
	} {
		want := map[string]string{
			"serverType": "cx22", "datacenter": "", "location": "fsn1",
			"image": "ubuntu-24.04", "placementGroupPrefix": "kkp-worker",
		}[field]
		if got != want {
			t.Errorf("%s = %q, want %q", field, got, want)
		}
	}
	// The unquoted network ID 4711 becomes the string "4711", as upstream.
	var networks []string
	for _, n := range spec.Networks {
		networks = append(networks, n.Value)
	}
	if want := []string{"kubermatic-private", "4711"}; !reflect.DeepEqual(networks, want) {
		t.Errorf("networks = %q, want %q", networks, want)
	}
	if len(spec.Firewalls) != 1 || spec.Firewalls[0].Value != "kubermatic-worker-fw" {
		t.Errorf("firewalls = %+v", spec.Firewalls)
	}
	if spec.Labels["my"] != "label" || spec.Labels["kubernetes-cluster"] != "6qsm86c2d" {
		t.Errorf("labels = %v", spec.Labels)
	}
	if spec.AssignPublicIPv4.Value == nil || !*spec.AssignPublicIPv4.Value {
		t.Errorf("assignPublicIPv4 = %+v, want true", spec.AssignPublicIPv4)
	}
	if spec.AssignPublicIPv6.Value == nil || *spec.AssignPublicIPv6.Value {
		t.Errorf("assignPublicIPv6 = %+v, want false", spec.AssignPublicIPv6)
	}

	// Config encodes back to the same providerSpec.value: its raw specs are
	// kept verbatim and its envelope fields have upstream's tags.
	out, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, m.Spec.ProviderSpec.Value.Raw, out)
}

// awsSpec mirrors the part of upstream sdk/cloudprovider/aws/types.go
// RawConfig that the AWS manifest uses.
type awsSpec struct {
	AccessKeyID        providerconfig.ConfigVarString   `json:"accessKeyId,omitempty"`
	AssumeRoleARN      providerconfig.ConfigVarString   `json:"assumeRoleARN,omitempty"`
	Region             providerconfig.ConfigVarString   `json:"region"`
	SecurityGroupIDs   []providerconfig.ConfigVarString `json:"securityGroupIDs,omitempty"`
	DiskSize           int32                            `json:"diskSize"`
	EBSVolumeEncrypted providerconfig.ConfigVarBool     `json:"ebsVolumeEncrypted"`
	EBSOptimized       providerconfig.ConfigVarBool     `json:"ebsOptimized"`
	IsSpotInstance     *bool                            `json:"isSpotInstance,omitempty"`
	SpotInstanceConfig *struct {
		MaxPrice          providerconfig.ConfigVarString `json:"maxPrice,omitempty"`
		PersistentRequest providerconfig.ConfigVarBool   `json:"persistentRequest,omitempty"`
	} `json:"spotInstanceConfig,omitempty"`
}

func TestAWSProviderSpec(t *testing.T) {
	m := loadMachine(t, "aws-machine.yaml")

	// The manifest has an envelope field Config does not know. GetConfig is
	// strict, as upstream's, and names it.
	_, err := providerconfig.GetConfig(m.Spec.ProviderSpec.Value)
	if err == nil || !strings.Contains(err.Error(), "x-wasmprov-future-envelope-field") {
		t.Fatalf("GetConfig error = %v, want one naming the unknown field", err)
	}

	var cfg providerconfig.Config
	if err := json.Unmarshal(m.Spec.ProviderSpec.Value.Raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.CloudProvider != providerconfig.CloudProviderAWS || cfg.OperatingSystem != providerconfig.OperatingSystemFlatcar {
		t.Errorf("cloudProvider/operatingSystem = %q/%q", cfg.CloudProvider, cfg.OperatingSystem)
	}
	wantNetwork := &providerconfig.NetworkConfig{
		CIDR: "10.0.1.17/24", Gateway: "10.0.1.1",
		DNS:      providerconfig.DNSConfig{Servers: []string{"10.0.0.2"}},
		IPFamily: providerconfig.IPFamilyIPv4IPv6,
	}
	if !reflect.DeepEqual(cfg.Network, wantNetwork) {
		t.Errorf("network = %+v, want %+v", cfg.Network, wantNetwork)
	}
	if cfg.OverwriteCloudConfig == nil || !strings.Contains(*cfg.OverwriteCloudConfig, "Zone=eu-central-1a") {
		t.Errorf("overwriteCloudConfig = %v", cfg.OverwriteCloudConfig)
	}

	var spec awsSpec
	if err := json.Unmarshal(cfg.CloudProviderSpec.Raw, &spec); err != nil {
		t.Fatalf("decoding cloudProviderSpec: %v", err)
	}
	if want := secretRef("kube-system", "machine-controller-aws", "accessKeyId"); spec.AccessKeyID.SecretKeyRef != want || spec.AccessKeyID.Value != "" {
		t.Errorf("accessKeyId = %+v", spec.AccessKeyID)
	}
	if want := configMapRef("kube-system", "aws-assume-role", "arn"); spec.AssumeRoleARN.ConfigMapKeyRef != want {
		t.Errorf("assumeRoleARN = %+v", spec.AssumeRoleARN)
	}
	if spec.Region.Value != "eu-central-1" || spec.DiskSize != 50 {
		t.Errorf("region/diskSize = %q/%d", spec.Region.Value, spec.DiskSize)
	}
	if len(spec.SecurityGroupIDs) != 2 || spec.SecurityGroupIDs[0].Value != "sg-0a1b2c3d4e5f" ||
		spec.SecurityGroupIDs[1].SecretKeyRef != secretRef("kube-system", "aws-extra-sg", "id") {
		t.Errorf("securityGroupIDs = %+v", spec.SecurityGroupIDs)
	}
	wantEncrypted := providerconfig.ConfigVarBool{Value: ptr(true), ConfigMapKeyRef: configMapRef("kube-system", "aws-defaults", "ebsVolumeEncrypted")}
	if !reflect.DeepEqual(spec.EBSVolumeEncrypted, wantEncrypted) {
		t.Errorf("ebsVolumeEncrypted = %+v, want %+v", spec.EBSVolumeEncrypted, wantEncrypted)
	}
	if !reflect.DeepEqual(spec.EBSOptimized, providerconfig.ConfigVarBool{Value: ptr(true)}) {
		t.Errorf("ebsOptimized = %+v", spec.EBSOptimized)
	}
	if spec.IsSpotInstance == nil || !*spec.IsSpotInstance || spec.SpotInstanceConfig == nil ||
		spec.SpotInstanceConfig.MaxPrice.Value != "0.0416" ||
		!reflect.DeepEqual(spec.SpotInstanceConfig.PersistentRequest, providerconfig.ConfigVarBool{Value: ptr(true)}) {
		t.Errorf("spot instance settings = %v %+v", spec.IsSpotInstance, spec.SpotInstanceConfig)
	}
}

func TestGetConfig(t *testing.T) {
	if _, err := providerconfig.GetConfig(nil); err == nil {
		t.Error("GetConfig(nil) did not fail")
	}
	cfg, err := providerconfig.GetConfig(&runtime.RawExtension{})
	if err != nil || !reflect.DeepEqual(cfg, &providerconfig.Config{}) {
		t.Errorf("GetConfig(empty) = %+v, %v; want an empty Config", cfg, err)
	}
	for name, raw := range map[string]string{
		"unknown field":         `{"cloudProvider":"fake","cloudProviderSpec":{},"bogus":1}`,
		"unknown network field": `{"cloudProvider":"fake","network":{"cidr":"10.0.0.0/8","mtu":1400}}`,
		"trailing data":         `{"cloudProvider":"fake"} {}`,
		"wrong type":            `{"sshPublicKeys":"ssh-ed25519 AAAA"}`,
	} {
		if _, err := providerconfig.GetConfig(&runtime.RawExtension{Raw: []byte(raw)}); err == nil {
			t.Errorf("%s: GetConfig(%s) did not fail", name, raw)
		}
	}
	// Unknown fields inside the raw specs are the provider's business.
	cfg, err = providerconfig.GetConfig(&runtime.RawExtension{Raw: []byte(
		`{"cloudProvider":"fake","cloudProviderSpec":{"anything":[1]},"operatingSystem":"rhel","operatingSystemSpec":null}`)})
	if err != nil {
		t.Fatalf("GetConfig: %v", err)
	}
	if cfg.CloudProvider != providerconfig.CloudProviderFake || string(cfg.CloudProviderSpec.Raw) != `{"anything":[1]}` ||
		cfg.OperatingSystem != providerconfig.OperatingSystemRHEL || cfg.OperatingSystemSpec.Raw != nil {
		t.Errorf("GetConfig = %+v", cfg)
	}
}

func TestConfigEncodingOfEmptyFields(t *testing.T) {
	// Upstream's tags: the first six fields are always emitted, network and
	// overwriteCloudConfig only when set; an unset RawExtension is null.
	out, err := json.Marshal(providerconfig.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"sshPublicKeys":null,"caPublicKey":"","cloudProvider":"","cloudProviderSpec":null,"operatingSystem":"","operatingSystemSpec":null}`
	if string(out) != want {
		t.Errorf("empty Config = %s, want %s", out, want)
	}
	out, err = json.Marshal(providerconfig.NetworkConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"cidr":"","gateway":"","dns":{"servers":null}}`; string(out) != want {
		t.Errorf("empty NetworkConfig = %s, want %s", out, want)
	}
}

func TestConstants(t *testing.T) {
	for got, want := range map[providerconfig.CloudProvider]string{
		providerconfig.CloudProviderHetzner:             "hetzner",
		providerconfig.CloudProviderAWS:                 "aws",
		providerconfig.CloudProviderFake:                "fake",
		providerconfig.CloudProviderGoogle:              "gce",
		providerconfig.CloudProviderVMwareCloudDirector: "vmware-cloud-director",
		providerconfig.CloudProviderOpenNebula:          "opennebula",
	} {
		if string(got) != want {
			t.Errorf("cloud provider constant %q, want %q", got, want)
		}
	}
	for got, want := range map[providerconfig.OperatingSystem]string{
		providerconfig.OperatingSystemUbuntu:       "ubuntu",
		providerconfig.OperatingSystemFlatcar:      "flatcar",
		providerconfig.OperatingSystemRHEL:         "rhel",
		providerconfig.OperatingSystemRockyLinux:   "rockylinux",
		providerconfig.OperatingSystemAmazonLinux2: "amzn2",
	} {
		if string(got) != want {
			t.Errorf("operating system constant %q, want %q", got, want)
		}
	}
	seen := map[providerconfig.CloudProvider]bool{}
	for _, p := range providerconfig.AllCloudProviders {
		if seen[p] {
			t.Errorf("duplicate cloud provider %q", p)
		}
		seen[p] = true
	}
	if len(seen) != 22 {
		t.Errorf("AllCloudProviders has %d entries, upstream has 22", len(seen))
	}
	if err := providerconfig.OperatingSystem("windows").Validate(); !errors.Is(err, providerconfig.ErrOSNotSupported) {
		t.Errorf("Validate(windows) = %v, want ErrOSNotSupported", err)
	}
}

func TestPackageImportsOnlyStdlibAndAPIMachinery(t *testing.T) {
	// Config is meant to be usable without k8s.io/api or client-go.
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			stdlib := !strings.Contains(strings.Split(path, "/")[0], ".")
			if !stdlib && !strings.HasPrefix(path, "k8s.io/apimachinery/") {
				t.Errorf("%s imports %q; only the standard library and k8s.io/apimachinery are allowed", f, path)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no package files checked")
	}
}

// assertSameJSON fails unless want and got are semantically equal JSON.
func assertSameJSON(t *testing.T, want, got []byte) {
	t.Helper()
	decode := func(data []byte) any {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decoding %s: %v", data, err)
		}
		return v
	}
	if !reflect.DeepEqual(decode(want), decode(got)) {
		t.Errorf("JSON differs\nwant: %s\ngot:  %s", want, got)
	}
}
