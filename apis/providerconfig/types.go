package providerconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
)

// The types in this file mirror upstream sdk/providerconfig/types.go
// (Config, OperatingSystem, CloudProvider, NetworkConfig, DNSConfig) and
// sdk/net/net.go (IPFamily).

// OperatingSystem defines the host operating system of a machine.
type OperatingSystem string

// The operating systems upstream supports.
const (
	OperatingSystemUbuntu       OperatingSystem = "ubuntu"
	OperatingSystemAmazonLinux2 OperatingSystem = "amzn2"
	OperatingSystemRHEL         OperatingSystem = "rhel"
	OperatingSystemFlatcar      OperatingSystem = "flatcar"
	OperatingSystemRockyLinux   OperatingSystem = "rockylinux"
)

// ErrOSNotSupported is returned by OperatingSystem.Validate for an unknown
// operating system.
var ErrOSNotSupported = errors.New("os not supported")

// AllOperatingSystems lists all supported operating system identifiers.
var AllOperatingSystems = []OperatingSystem{
	OperatingSystemUbuntu,
	OperatingSystemAmazonLinux2,
	OperatingSystemRHEL,
	OperatingSystemFlatcar,
	OperatingSystemRockyLinux,
}

// Validate returns ErrOSNotSupported unless os is one of
// AllOperatingSystems.
func (os OperatingSystem) Validate() error {
	for _, supported := range AllOperatingSystems {
		if os == supported {
			return nil
		}
	}
	return ErrOSNotSupported
}

// CloudProvider names the cloud provider that provisions a machine.
type CloudProvider string

// The cloud providers upstream knows.
const (
	CloudProviderAWS                 CloudProvider = "aws"
	CloudProviderAzure               CloudProvider = "azure"
	CloudProviderDigitalocean        CloudProvider = "digitalocean"
	CloudProviderGoogle              CloudProvider = "gce"
	CloudProviderEquinixMetal        CloudProvider = "equinixmetal"
	CloudProviderPacket              CloudProvider = "packet"
	CloudProviderHetzner             CloudProvider = "hetzner"
	CloudProviderKubeVirt            CloudProvider = "kubevirt"
	CloudProviderLinode              CloudProvider = "linode"
	CloudProviderNutanix             CloudProvider = "nutanix"
	CloudProviderOpenstack           CloudProvider = "openstack"
	CloudProviderVsphere             CloudProvider = "vsphere"
	CloudProviderVultr               CloudProvider = "vultr"
	CloudProviderVMwareCloudDirector CloudProvider = "vmware-cloud-director"
	CloudProviderFake                CloudProvider = "fake"
	CloudProviderEdge                CloudProvider = "edge"
	CloudProviderAlibaba             CloudProvider = "alibaba"
	CloudProviderAnexia              CloudProvider = "anexia"
	CloudProviderScaleway            CloudProvider = "scaleway"
	CloudProviderBaremetal           CloudProvider = "baremetal"
	CloudProviderExternal            CloudProvider = "external"
	CloudProviderOpenNebula          CloudProvider = "opennebula"
)

// AllCloudProviders lists all cloud providers upstream supports, in
// upstream's order.
var AllCloudProviders = []CloudProvider{
	CloudProviderAWS,
	CloudProviderAzure,
	CloudProviderDigitalocean,
	CloudProviderEquinixMetal,
	CloudProviderPacket,
	CloudProviderGoogle,
	CloudProviderHetzner,
	CloudProviderKubeVirt,
	CloudProviderLinode,
	CloudProviderNutanix,
	CloudProviderOpenstack,
	CloudProviderVsphere,
	CloudProviderVMwareCloudDirector,
	CloudProviderFake,
	CloudProviderEdge,
	CloudProviderAlibaba,
	CloudProviderAnexia,
	CloudProviderScaleway,
	CloudProviderBaremetal,
	CloudProviderVultr,
	CloudProviderOpenNebula,
	CloudProviderExternal,
}

// IPFamily is the IP family of a machine's network: IPv4, IPv6 or a dual
// stack. Upstream defines it in sdk/net.
type IPFamily string

// The IP families upstream accepts.
const (
	IPFamilyUnspecified IPFamily = ""          // interpreted as IPv4
	IPFamilyIPv4        IPFamily = "IPv4"      // IPv4 only
	IPFamilyIPv6        IPFamily = "IPv6"      // IPv6 only
	IPFamilyIPv4IPv6    IPFamily = "IPv4+IPv6" // dual stack with IPv4 as primary
	IPFamilyIPv6IPv4    IPFamily = "IPv6+IPv4" // dual stack with IPv6 as primary
)

// DNSConfig contains a machine's DNS configuration.
type DNSConfig struct {
	Servers []string `json:"servers"`
}

// NetworkConfig contains a machine's static network configuration.
//
// As upstream, cidr, gateway and dns carry no omitempty and are always
// emitted.
type NetworkConfig struct {
	CIDR     string    `json:"cidr"`
	Gateway  string    `json:"gateway"`
	DNS      DNSConfig `json:"dns"`
	IPFamily IPFamily  `json:"ipFamily,omitempty"`
}

// Config is the content of a Machine's spec.providerSpec.value.
//
// The JSON tags, including the missing omitempty on the first six fields,
// are exactly upstream's.
type Config struct {
	SSHPublicKeys []string `json:"sshPublicKeys"`
	CAPublicKey   string   `json:"caPublicKey"`

	CloudProvider CloudProvider `json:"cloudProvider"`
	// CloudProviderSpec is the provider specific part, left raw so that
	// each provider decodes it into its own type.
	CloudProviderSpec runtime.RawExtension `json:"cloudProviderSpec"`

	OperatingSystem OperatingSystem `json:"operatingSystem"`
	// OperatingSystemSpec is the operating system specific part, left raw
	// like CloudProviderSpec.
	OperatingSystemSpec runtime.RawExtension `json:"operatingSystemSpec"`

	// +optional
	Network *NetworkConfig `json:"network,omitempty"`

	// +optional
	OverwriteCloudConfig *string `json:"overwriteCloudConfig,omitempty"`
}

// GetConfig decodes a Machine's spec.providerSpec.value into a Config.
//
// Like upstream's GetConfig it fails for a nil value, returns an empty
// Config for an empty one, and decodes strictly: a field that Config does
// not know is an error rather than silently dropped, because a typo in a
// provider config should not produce a machine with defaults. Unlike
// upstream it takes the RawExtension itself instead of the
// cluster/v1alpha1 ProviderSpec, which keeps this package free of
// k8s.io/api; pass machine.Spec.ProviderSpec.Value.
func GetConfig(value *runtime.RawExtension) (*Config, error) {
	if value == nil {
		return nil, errors.New("machine.spec.providerSpec.value is nil")
	}
	var cfg Config
	if len(value.Raw) == 0 {
		return &cfg, nil
	}
	if err := strictUnmarshal(value.Raw, &cfg); err != nil {
		return nil, fmt.Errorf("decoding machine.spec.providerSpec.value: %w", err)
	}
	return &cfg, nil
}

// strictUnmarshal decodes exactly one JSON value into v and rejects
// unknown fields and trailing data.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}
