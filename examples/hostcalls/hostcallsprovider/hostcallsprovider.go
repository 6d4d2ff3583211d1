// Package hostcallsprovider is a provider for a minimal JSON cloud API,
// written to exercise every wasmprov host function:
//
//	GET    /v1/ping                     token check (401 when wrong)
//	POST   /v1/instances                {name, uid, userdata, volumes} -> Instance
//	GET    /v1/instances/{uid}          Instance or 404
//	DELETE /v1/instances/{uid}          204, or 404 when already gone
//	POST   /v1/instances/{uid}/migrate  {uid: new} re-keys the instance
//
// Every request carries "Authorization: Bearer <token>". A 429 answer
// becomes a retryable error carrying the Retry-After hint.
package hostcallsprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// HTTP status codes and methods, spelled out to keep net/http out of the
// module.
const (
	statusNotFound        = 404
	statusUnauthorized    = 401
	statusForbidden       = 403
	statusTooManyRequests = 429
	methodGet             = "GET"
	methodPost            = "POST"
	methodDelete          = "DELETE"
)

// Finalizer is added before Create touches the cloud and removed once Delete
// has removed the instance, so a crash in between can never orphan one.
const Finalizer = "hostcalls.wasmprov.io/cleanup"

// AnnotationInstanceID records the cloud's ID for the instance.
const AnnotationInstanceID = "hostcalls.wasmprov.io/instance-id"

// TokenEnv is the host environment variable used when the spec has no token.
const TokenEnv = "HOSTCALLS_TOKEN"

// Spec is the cloudProviderSpec.
type Spec struct {
	Endpoint string          `json:"endpoint"`
	Token    json.RawMessage `json:"token,omitempty"` // a ConfigVarString
	Size     string          `json:"size,omitempty"`
	Region   string          `json:"region,omitempty"`
}

// Instance is the API's instance object.
type Instance struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	UID     string   `json:"uid"`
	IP      string   `json:"ip"`
	Status  string   `json:"status"`
	Volumes []string `json:"volumes,omitempty"`
}

// Provider implements provider.Provider.
type Provider struct{}

func decodeSpec(s provider.MachineSpec) (provider.Config, Spec, error) {
	var spec Spec
	cfg, err := provider.DecodeConfig(s)
	if err != nil {
		return cfg, spec, err
	}
	if err := json.Unmarshal(cfg.CloudProviderSpec, &spec); err != nil {
		return cfg, spec, provider.Terminal(provider.InvalidConfiguration, "invalid cloudProviderSpec: %v", err)
	}
	if spec.Endpoint == "" {
		return cfg, spec, provider.Terminal(provider.InvalidConfiguration, "cloudProviderSpec.endpoint is required")
	}
	return cfg, spec, nil
}

// client is what one call needs to talk to the API. It uses the SDK's
// DoHTTP rather than net/http's client: the module is several megabytes
// smaller (examples/hetzner-hcloudgo shows the net/http way, hcloud-go
// over guests/go/hosthttp).
type client struct {
	endpoint, token string
}

func newClient(ctx context.Context, spec Spec) (*client, error) {
	token, err := provider.ConfigVarString(ctx, spec.Token, TokenEnv)
	if err != nil {
		return nil, fmt.Errorf("resolving token: %w", err)
	}
	if token == "" {
		return nil, provider.Terminal(provider.InvalidConfiguration, "no token: set cloudProviderSpec.token or %s", TokenEnv)
	}
	return &client{endpoint: strings.TrimRight(spec.Endpoint, "/"), token: token}, nil
}

// do sends a request and decodes a JSON answer into out (if non-nil). It
// maps HTTP failures onto the error classes machine-controller acts on.
func (c *client) do(ctx context.Context, method, path string, in, out any) (int, error) {
	req := provider.HTTPRequest{Method: method, URL: c.endpoint + path, Header: map[string][]string{
		"Authorization": {"Bearer " + c.token},
		"Content-Type":  {"application/json"},
	}}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		req.Body = b
	}
	resp, err := provider.DoHTTP(ctx, req)
	if err != nil {
		return 0, err
	}
	data := resp.Body
	switch {
	case resp.Status == statusUnauthorized || resp.Status == statusForbidden:
		return resp.Status, provider.Terminal(provider.InvalidConfiguration, "%s %s: HTTP %d", method, path, resp.Status)
	case resp.Status == statusTooManyRequests:
		var after int
		if v := resp.Header["Retry-After"]; len(v) > 0 {
			after, _ = strconv.Atoi(v[0])
		}
		return resp.Status, &provider.RetryableError{RetryAfter: time.Duration(after) * time.Second,
			Err: fmt.Errorf("%s %s: rate limited", method, path)}
	case resp.Status == statusNotFound:
		return resp.Status, nil
	case resp.Status >= 300:
		return resp.Status, fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.Status, bytes.TrimSpace(data))
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.Status, fmt.Errorf("%s %s: decoding answer: %w", method, path, err)
		}
	}
	return resp.Status, nil
}

// AddDefaults sets region "local" when none is given.
func (Provider) AddDefaults(_ context.Context, s provider.MachineSpec) (provider.MachineSpec, error) {
	cfg, spec, err := decodeSpec(s)
	if err != nil {
		return s, err
	}
	if spec.Region != "" {
		return s, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(cfg.CloudProviderSpec, &raw); err != nil {
		return s, err
	}
	raw["region"] = json.RawMessage(`"local"`)
	var value map[string]json.RawMessage
	if err := json.Unmarshal(s.ProviderSpec.Value, &value); err != nil {
		return s, err
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return s, err
	}
	value["cloudProviderSpec"] = b
	if s.ProviderSpec.Value, err = json.Marshal(value); err != nil {
		return s, err
	}
	return s, nil
}

// Validate checks the spec and that the token is accepted.
func (Provider) Validate(ctx context.Context, s provider.MachineSpec) error {
	_, spec, err := decodeSpec(s)
	if err != nil {
		return err
	}
	c, err := newClient(ctx, spec)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, methodGet, "/v1/ping", nil, nil)
	return err
}

func (c *client) get(ctx context.Context, uid string) (*Instance, error) {
	var inst Instance
	code, err := c.do(ctx, methodGet, "/v1/instances/"+uid, nil, &inst)
	if err != nil {
		return nil, err
	}
	if code == statusNotFound {
		return nil, provider.ErrInstanceNotFound
	}
	return &inst, nil
}

func toInstance(i *Instance) *provider.Instance {
	status := provider.StatusUnknown
	switch i.Status {
	case "running":
		status = provider.StatusRunning
	case "creating":
		status = provider.StatusCreating
	case "deleting":
		status = provider.StatusDeleting
	}
	out := &provider.Instance{Name: i.Name, ID: i.ID, ProviderID: "hostcalls://" + i.ID, Status: status}
	if i.IP != "" {
		out.Addresses = map[string]string{i.IP: "InternalIP"}
	}
	return out
}

func machineClient(ctx context.Context, m *provider.Machine) (*client, error) {
	_, spec, err := decodeSpec(m.Spec)
	if err != nil {
		return nil, err
	}
	return newClient(ctx, spec)
}

// Get finds the instance by the Machine's UID.
func (Provider) Get(ctx context.Context, m *provider.Machine) (*provider.Instance, error) {
	c, err := machineClient(ctx, m)
	if err != nil {
		return nil, err
	}
	inst, err := c.get(ctx, m.UID)
	if err != nil {
		return nil, err
	}
	return toInstance(inst), nil
}

// GetCloudConfig returns the endpoint as the kubelet's cloud config.
func (Provider) GetCloudConfig(_ context.Context, s provider.MachineSpec) (string, string, error) {
	_, spec, err := decodeSpec(s)
	if err != nil {
		return "", "", err
	}
	return "endpoint = " + spec.Endpoint + "\n", "hostcalls", nil
}

// nodeVolumes lists the PersistentVolumes bound to the Machine's node.
func nodeVolumes(ctx context.Context, m *provider.Machine) ([]string, error) {
	pvs, err := provider.ListPersistentVolumes(ctx, "node="+m.Name)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, pv := range pvs {
		if pv.Spec.CSI != nil {
			ids = append(ids, pv.Spec.CSI.VolumeHandle)
		}
	}
	return ids, nil
}

// Create adds the finalizer, then creates the instance with the node's
// volumes, and records the instance ID in an annotation.
func (Provider) Create(ctx context.Context, m *provider.Machine, userdata string) (*provider.Instance, error) {
	c, err := machineClient(ctx, m)
	if err != nil {
		return nil, err
	}
	log := provider.Logger(ctx)
	if !m.HasFinalizer(Finalizer) {
		if m, err = provider.AddFinalizer(ctx, Finalizer); err != nil {
			return nil, fmt.Errorf("adding finalizer: %w", err)
		}
	}
	volumes, err := nodeVolumes(ctx, m)
	if err != nil {
		return nil, err
	}
	var inst Instance
	req := map[string]any{"name": m.Name, "uid": m.UID, "userdata": userdata, "volumes": volumes}
	if _, err := c.do(ctx, methodPost, "/v1/instances", req, &inst); err != nil {
		return nil, err
	}
	log.Info("instance created", "id", inst.ID, "volumes", len(volumes))
	if _, err := provider.SetAnnotation(ctx, AnnotationInstanceID, inst.ID); err != nil {
		return nil, fmt.Errorf("recording instance id: %w", err)
	}
	return toInstance(&inst), nil
}

// Delete removes the instance (404 counts as done) and then the finalizer.
func (Provider) Delete(ctx context.Context, m *provider.Machine) error {
	c, err := machineClient(ctx, m)
	if err != nil {
		return err
	}
	volumes, err := nodeVolumes(ctx, m)
	if err != nil {
		return err
	}
	if _, err := c.do(ctx, methodDelete, "/v1/instances/"+m.UID, nil, nil); err != nil {
		return err
	}
	provider.Logger(ctx).Info("instance deleted", "volumesKept", len(volumes))
	if m.HasFinalizer(Finalizer) {
		if _, err := provider.RemoveFinalizer(ctx, Finalizer); err != nil {
			return fmt.Errorf("removing finalizer: %w", err)
		}
	}
	return nil
}

// MachineMetricsLabels reports size and region without an API call.
func (Provider) MachineMetricsLabels(_ context.Context, m *provider.Machine) (map[string]string, error) {
	_, spec, err := decodeSpec(m.Spec)
	if err != nil {
		return nil, err
	}
	size := spec.Size
	if size == "" {
		size = "small"
	}
	return map[string]string{"size": size, "region": spec.Region}, nil
}

// MigrateUID re-keys the instance to the new UID.
func (Provider) MigrateUID(ctx context.Context, m *provider.Machine, newUID string) error {
	c, err := machineClient(ctx, m)
	if err != nil {
		return err
	}
	// A 404 (no instance under the old UID) means there is nothing to migrate.
	_, err = c.do(ctx, methodPost, "/v1/instances/"+m.UID+"/migrate", map[string]string{"uid": newUID}, nil)
	return err
}

var _ provider.Provider = Provider{}
