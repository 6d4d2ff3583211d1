// Package benchprov is the provider logic every contender of the benchmark
// runs: native Go, wasmprov (wazero), hashicorp/go-plugin and Extism all
// call these functions, so a difference in time is a difference in the
// mechanism, never in the work.
//
// The logic is a Hetzner-like provider reduced to what matters for cost:
//   - Validate decodes spec.providerSpec.value into a providerconfig-like
//     Config and its cloudProviderSpec into a Hetzner-like spec, and checks
//     fields the way machine-controller's hetzner provider does;
//   - Create makes three HTTP calls (server type, image, create server)
//     against the endpoint in the spec and returns the instance.
//
// The package uses the standard library only, so it compiles for the host
// and for GOOS=wasip1.
package benchprov

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// MachineSpec mirrors the JSON of cluster.k8s.io/v1alpha1 MachineSpec with
// the same light shape as the wasmprov Go SDK's provider.MachineSpec. The
// go-plugin and Extism contenders receive the spec as JSON and decode it into
// this type, as the wasmprov guest SDK decodes it into its own.
type MachineSpec struct {
	ObjectMeta   ObjectMeta      `json:"metadata,omitempty"`
	Taints       json.RawMessage `json:"taints,omitempty"`
	ProviderSpec struct {
		Value     json.RawMessage `json:"value,omitempty"`
		ValueFrom json.RawMessage `json:"valueFrom,omitempty"`
	} `json:"providerSpec"`
	Versions struct {
		Kubelet string `json:"kubelet"`
	} `json:"versions,omitempty"`
	ConfigSource json.RawMessage `json:"configSource,omitempty"`
	ProviderID   *string         `json:"providerID,omitempty"`
}

// Machine mirrors a cluster.k8s.io/v1alpha1 Machine's JSON.
type Machine struct {
	APIVersion string          `json:"apiVersion,omitempty"`
	Kind       string          `json:"kind,omitempty"`
	ObjectMeta ObjectMeta      `json:"metadata,omitempty"`
	Spec       MachineSpec     `json:"spec,omitempty"`
	Status     json.RawMessage `json:"status,omitempty"`
}

// ObjectMeta mirrors metav1.ObjectMeta as the SDK does.
type ObjectMeta struct {
	Name              string            `json:"name,omitempty"`
	GenerateName      string            `json:"generateName,omitempty"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	Generation        int64             `json:"generation,omitempty"`
	CreationTimestamp json.RawMessage   `json:"creationTimestamp,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	OwnerReferences   json.RawMessage   `json:"ownerReferences,omitempty"`
	Finalizers        []string          `json:"finalizers,omitempty"`
	ManagedFields     json.RawMessage   `json:"managedFields,omitempty"`
}

// Config mirrors machine-controller's providerconfig.Config.
type Config struct {
	SSHPublicKeys        []string        `json:"sshPublicKeys,omitempty"`
	CAPublicKey          string          `json:"caPublicKey,omitempty"`
	CloudProvider        string          `json:"cloudProvider,omitempty"`
	CloudProviderSpec    json.RawMessage `json:"cloudProviderSpec,omitempty"`
	OperatingSystem      string          `json:"operatingSystem,omitempty"`
	OperatingSystemSpec  json.RawMessage `json:"operatingSystemSpec,omitempty"`
	Network              json.RawMessage `json:"network,omitempty"`
	OverwriteCloudConfig *string         `json:"overwriteCloudConfig,omitempty"`
}

// HetznerSpec mirrors machine-controller's hetzner RawConfig. Config vars
// (token, network) are a bare string or {value, secretKeyRef,
// configMapKeyRef}; the benchmark keeps them raw and checks presence only.
type HetznerSpec struct {
	Token                json.RawMessage   `json:"token,omitempty"`
	ServerType           string            `json:"serverType"`
	Datacenter           string            `json:"datacenter"`
	Image                string            `json:"image"`
	Location             string            `json:"location"`
	PlacementGroupPrefix string            `json:"placementGroupPrefix"`
	Networks             []json.RawMessage `json:"networks"`
	Firewall             json.RawMessage   `json:"firewall"`
	Labels               map[string]string `json:"labels,omitempty"`
	AssignPublicIPv4     *bool             `json:"assignPublicIPv4,omitempty"`
	AssignPublicIPv6     *bool             `json:"assignPublicIPv6,omitempty"`
	// Endpoint overrides the API base URL (hcloud-go's WithEndpoint); the
	// benchmark points it at a loopback server.
	Endpoint string `json:"endpoint,omitempty"`
}

// Instance is what Create returns.
type Instance struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"`
	ProviderID string            `json:"providerID"`
	Addresses  map[string]string `json:"addresses,omitempty"`
	Status     string            `json:"status"`
}

// ErrInvalid marks a configuration error (a terminal
// InvalidConfiguration in machine-controller terms).
var ErrInvalid = errors.New("invalid configuration")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

var operatingSystems = []string{"ubuntu", "amzn2", "rhel", "flatcar", "rockylinux"}

// Decode decodes spec.providerSpec.value (raw JSON) into Config and
// HetznerSpec.
func Decode(providerSpecValue []byte) (Config, HetznerSpec, error) {
	var c Config
	var h HetznerSpec
	if len(providerSpecValue) == 0 || string(providerSpecValue) == "null" {
		return c, h, invalid("machine.spec.providerSpec.value is empty")
	}
	if err := json.Unmarshal(providerSpecValue, &c); err != nil {
		return c, h, invalid("failed to decode providerSpec.value: %v", err)
	}
	if err := json.Unmarshal(c.CloudProviderSpec, &h); err != nil {
		return c, h, invalid("failed to decode cloudProviderSpec: %v", err)
	}
	return c, h, nil
}

// Validate is the provider's Validate on spec.providerSpec.value.
func Validate(providerSpecValue []byte) error {
	c, h, err := Decode(providerSpecValue)
	if err != nil {
		return err
	}
	return check(c, h)
}

func check(c Config, h HetznerSpec) error {
	if c.CloudProvider != "hetzner" {
		return invalid("cloudProvider is %q, want hetzner", c.CloudProvider)
	}
	okOS := false
	for _, os := range operatingSystems {
		if c.OperatingSystem == os {
			okOS = true
		}
	}
	if !okOS {
		return invalid("invalid/not supported operating system specified %q", c.OperatingSystem)
	}
	if len(c.SSHPublicKeys) == 0 {
		return invalid("no ssh public keys")
	}
	for _, k := range c.SSHPublicKeys {
		if !strings.HasPrefix(k, "ssh-") && !strings.HasPrefix(k, "ecdsa-") {
			return invalid("ssh key %q is not in authorized_keys format", k[:min(len(k), 16)])
		}
	}
	if len(h.Token) == 0 || string(h.Token) == `""` || string(h.Token) == "null" {
		return invalid("token is missing")
	}
	if h.ServerType == "" {
		return invalid("serverType is missing")
	}
	if h.Image == "" {
		return invalid("image is missing")
	}
	if h.Location == "" && h.Datacenter == "" {
		return invalid("either datacenter or location must be set")
	}
	if h.Location != "" && h.Datacenter != "" {
		return invalid("datacenter and location are mutually exclusive")
	}
	if len(h.Networks) == 0 {
		return invalid("at least one network is required")
	}
	if h.AssignPublicIPv4 != nil && !*h.AssignPublicIPv4 && h.AssignPublicIPv6 != nil && !*h.AssignPublicIPv6 && len(h.Networks) == 0 {
		return invalid("a server needs a public IP or a network")
	}
	for k := range h.Labels {
		if len(k) > 63 {
			return invalid("label key %q is too long", k)
		}
	}
	return nil
}

// Create is the provider's Create: three calls to the cloud API through
// client (the host's transport in a sandbox, a plain client natively).
func Create(ctx context.Context, client *http.Client, machineName, uid string, providerSpecValue []byte) (*Instance, error) {
	c, h, err := Decode(providerSpecValue)
	if err != nil {
		return nil, err
	}
	if err := check(c, h); err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(h.Endpoint, "/")
	var st struct {
		ServerTypes []struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		} `json:"server_types"`
	}
	if err := do(ctx, client, http.MethodGet, base+"/server_types?name="+h.ServerType, nil, &st); err != nil {
		return nil, err
	}
	if len(st.ServerTypes) == 0 {
		return nil, invalid("server type %q not found", h.ServerType)
	}
	var im struct {
		Images []struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		} `json:"images"`
	}
	if err := do(ctx, client, http.MethodGet, base+"/images?name="+h.Image, nil, &im); err != nil {
		return nil, err
	}
	if len(im.Images) == 0 {
		return nil, invalid("image %q not found", h.Image)
	}
	req := map[string]any{
		"name":        machineName,
		"server_type": st.ServerTypes[0].ID,
		"image":       im.Images[0].ID,
		"location":    h.Location,
		"ssh_keys":    c.SSHPublicKeys,
		"labels":      map[string]string{"machine-uid": uid},
	}
	body, _ := json.Marshal(req)
	var created struct {
		Server struct {
			ID        int64  `json:"id"`
			Name      string `json:"name"`
			Status    string `json:"status"`
			PublicNet struct {
				IPv4 struct {
					IP string `json:"ip"`
				} `json:"ipv4"`
			} `json:"public_net"`
		} `json:"server"`
	}
	if err := do(ctx, client, http.MethodPost, base+"/servers", body, &created); err != nil {
		return nil, err
	}
	id := strconv.FormatInt(created.Server.ID, 10)
	return &Instance{
		Name:       created.Server.Name,
		ID:         id,
		ProviderID: "hcloud://" + id,
		Addresses:  map[string]string{created.Server.PublicNet.IPv4.IP: "ExternalIP"},
		Status:     "creating",
	}, nil
}

func do(ctx context.Context, client *http.Client, method, url string, body []byte, into any) error {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer benchmark-token")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: status %d: %s", method, url, resp.StatusCode, b)
	}
	return json.Unmarshal(b, into)
}
