// Package ref is the reference provider used to test the conformance
// suite: a small, correct, stateful provider for the minicloud API
// (conformance/internal/minicloud). Each deliberately broken provider in
// conformance/testdata/broken/NAME registers it with one Break, which turns
// on exactly one realistic bug that one conformance check must catch.
package ref

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// Break names one bug to build in; "" builds the correct provider.
type Break string

// The bugs, each named after what it does wrong.
const (
	None                  Break = ""
	UndeclaredCapability  Break = "undeclared-capability"   // calls config_var without declaring it
	DefaultsNotIdempotent Break = "defaults-not-idempotent" // AddDefaults appends a tag every time
	RejectsValid          Break = "rejects-valid"           // Validate requires a field nobody sets
	AcceptsEmpty          Break = "accepts-empty"           // Validate accepts a missing providerSpec
	GarbageTransient      Break = "garbage-transient"       // decode errors are plain (retriable) errors
	GetErrorNotFound      Break = "get-error-not-found"     // Get reports a missing instance as a plain error
	GetWrongID            Break = "get-wrong-id"            // Get decorates the ID Create returned
	CreateDuplicates      Break = "create-duplicates"       // Create makes a new instance every time
	DeleteMissingFails    Break = "delete-missing-fails"    // Delete of a missing instance fails
	DeleteNoop            Break = "delete-noop"             // Delete reports success without deleting
	DeleteNeverDone       Break = "delete-never-done"       // async_delete: Delete answers in progress forever
	MigrateNoop           Break = "migrate-noop"            // MigrateUID does nothing
	NoSizeLabel           Break = "no-size-label"           // metrics labels lack "size"
	SharedName            Break = "shared-name"             // every instance is named "worker"
	PanicsOnShortName     Break = "panics-on-short-name"    // slices the Machine name blindly
	MigrateKeepsOldUID    Break = "migrate-keeps-old-uid"   // MigrateUID adds the new UID and keeps the old
	NilResponseOnFault    Break = "nil-response-on-fault"   // reads the response of a request that failed
	NotFoundOnFault       Break = "not-found-on-fault"      // Get takes any API error for "no instance"
	DeleteIgnoresErrors   Break = "delete-ignores-errors"   // Delete reports success whatever the API said
)

// Spec is the cloudProviderSpec.
type Spec struct {
	Endpoint string `json:"endpoint"`
	// Token is a config var: a string, or (keyed providers) an object
	// with secretKeyRef the host resolves.
	Token  json.RawMessage `json:"token"`
	Size   string          `json:"size,omitempty"`
	Tags   []string        `json:"tags,omitempty"`
	Region string          `json:"region,omitempty"`

	token string // resolved
}

type prov struct {
	b   Break
	key Key
}

// Register registers the provider with bug b.
func Register(b Break) {
	caps := []abi.Capability{abi.CapHTTP}
	if b == DeleteNeverDone {
		caps = append(caps, abi.CapAsyncDelete)
	}
	provider.Register(prov{b: b}, provider.Needs(caps...))
}

func (p prov) config(ctx context.Context, s provider.MachineSpec) (provider.Config, Spec, error) {
	var sp Spec
	if p.b == AcceptsEmpty && (len(s.ProviderSpec.Value) == 0 || string(s.ProviderSpec.Value) == "null") {
		return provider.Config{}, Spec{Endpoint: "http://invalid.test", token: "x", Size: "small"}, nil
	}
	c, err := provider.DecodeConfig(s)
	if err != nil {
		if p.b == GarbageTransient && len(s.ProviderSpec.Value) > 0 && string(s.ProviderSpec.Value) != "null" {
			return c, sp, errors.New(err.Error())
		}
		return c, sp, err
	}
	if err := json.Unmarshal(c.CloudProviderSpec, &sp); err != nil {
		if p.b == GarbageTransient {
			return c, sp, fmt.Errorf("decoding cloudProviderSpec: %v", err)
		}
		return c, sp, provider.Terminal(provider.InvalidConfiguration, "decoding cloudProviderSpec: %v", err)
	}
	if err := p.resolveToken(ctx, &sp); err != nil {
		return c, sp, err
	}
	if p.b == UndeclaredCapability {
		// Resolve the token as a ConfigVarString, without having declared
		// config_var: the host refuses, and the bug hides behind a fallback.
		if tok, err := provider.ConfigVarString(ctx, json.RawMessage(fmt.Sprintf("%q", sp.token)), ""); err == nil {
			sp.token = tok
		}
	}
	return c, sp, nil
}

func (p prov) AddDefaults(ctx context.Context, s provider.MachineSpec) (provider.MachineSpec, error) {
	c, sp, err := p.config(ctx, s)
	if err != nil {
		return s, err
	}
	changed := false
	if sp.Size == "" {
		sp.Size, changed = "small", true
	}
	if p.b == DefaultsNotIdempotent {
		sp.Tags, changed = append(sp.Tags, "managed"), true
	}
	if !changed {
		return s, nil
	}
	var value map[string]json.RawMessage
	if err := json.Unmarshal(s.ProviderSpec.Value, &value); err != nil {
		return s, provider.Terminal(provider.InvalidConfiguration, "%v", err)
	}
	_ = c
	cps, _ := json.Marshal(sp)
	value["cloudProviderSpec"] = cps
	s.ProviderSpec.Value, _ = json.Marshal(value)
	return s, nil
}

func (p prov) Validate(ctx context.Context, s provider.MachineSpec) error {
	_, sp, err := p.config(ctx, s)
	if err != nil {
		return err
	}
	if sp.Endpoint == "" || sp.token == "" {
		return provider.Terminal(provider.InvalidConfiguration, "endpoint and token are required")
	}
	if p.b == RejectsValid && sp.Region == "" {
		return provider.Terminal(provider.InvalidConfiguration, "region is required")
	}
	return nil
}

func (p prov) GetCloudConfig(context.Context, provider.MachineSpec) (string, string, error) {
	return "", "", nil
}

type instance struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	UID    string `json:"uid"`
	Size   string `json:"size"`
	Status string `json:"status"`
}

type apiError struct {
	status int
	body   string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("cloud API: HTTP %d: %s", e.status, strings.TrimSpace(e.body))
}

// api calls the cloud through the host's http_do directly (not net/http,
// which would make each of the broken test modules several megabytes
// larger and slower to compile).
func (p prov) api(ctx context.Context, sp Spec, method, path string, in, out any) error {
	req := abi.HTTPRequest{Method: method, URL: strings.TrimSuffix(sp.Endpoint, "/") + path,
		Header: map[string][]string{"Authorization": {"Bearer " + sp.token}}}
	if in != nil {
		req.Body, _ = json.Marshal(in)
		req.Header["Content-Type"] = []string{"application/json"}
	}
	reqJSON, _ := json.Marshal(req)
	b, err := provider.HostCall(ctx, abi.ImportHTTP, reqJSON)
	if err != nil && p.b == NilResponseOnFault {
		// As a Go SDK caller that reads resp.StatusCode before err.
		var resp *abi.HTTPResponse
		return fmt.Errorf("cloud API: HTTP %d: %w", resp.Status, err)
	}
	if err != nil {
		return err
	}
	var resp abi.HTTPResponse
	if err := json.Unmarshal(b, &resp); err != nil {
		return err
	}
	if resp.Status >= 300 {
		return &apiError{resp.Status, string(resp.Body)}
	}
	if out != nil {
		return json.Unmarshal(resp.Body, out)
	}
	return nil
}

func (p prov) lookup(ctx context.Context, sp Spec, key, value string) (*instance, error) {
	var list struct {
		Instances []instance `json:"instances"`
	}
	if err := p.api(ctx, sp, "GET", "/v1/instances?"+key+"="+url.QueryEscape(value), nil, &list); err != nil {
		return nil, err
	}
	if len(list.Instances) == 0 {
		return nil, nil
	}
	return &list.Instances[0], nil
}

func toInstance(i *instance) *provider.Instance {
	return &provider.Instance{Name: i.Name, ID: i.ID, ProviderID: "minicloud://" + i.ID, Status: provider.InstanceStatus(i.Status)}
}

func (p prov) Get(ctx context.Context, m *provider.Machine) (*provider.Instance, error) {
	if p.key != ByUID {
		return p.keyedGet(ctx, m)
	}
	if p.b == PanicsOnShortName {
		provider.Logger(ctx).Debug("get", "prefix", m.Name[:8])
	}
	_, sp, err := p.config(ctx, m.Spec)
	if err != nil {
		return nil, err
	}
	i, err := p.lookup(ctx, sp, "uid", m.UID)
	if err != nil && p.b == NotFoundOnFault {
		return nil, provider.ErrInstanceNotFound
	}
	if err != nil {
		return nil, err
	}
	if i == nil {
		if p.b == GetErrorNotFound {
			return nil, errors.New("no instance for this machine")
		}
		return nil, provider.ErrInstanceNotFound
	}
	inst := toInstance(i)
	if p.b == GetWrongID {
		inst.ID = "srv-" + inst.ID
	}
	return inst, nil
}

func (p prov) Create(ctx context.Context, m *provider.Machine, _ string) (*provider.Instance, error) {
	if p.key != ByUID {
		return p.keyedCreate(ctx, m)
	}
	_, sp, err := p.config(ctx, m.Spec)
	if err != nil {
		return nil, err
	}
	name := m.Name
	switch p.b {
	case CreateDuplicates:
		// "Unique" names without looking first: every Create is a new instance.
		var list struct {
			Instances []instance `json:"instances"`
		}
		_ = p.api(ctx, sp, "GET", "/v1/instances?uid="+url.QueryEscape(m.UID), nil, &list)
		name = fmt.Sprintf("%s-%d", m.Name, len(list.Instances))
	case SharedName:
		name = "worker"
	default:
		if i, err := p.lookup(ctx, sp, "uid", m.UID); err != nil {
			return nil, err
		} else if i != nil {
			return toInstance(i), nil
		}
	}
	var out struct {
		Instance instance `json:"instance"`
	}
	err = p.api(ctx, sp, "POST", "/v1/instances", map[string]string{"name": name, "uid": m.UID, "size": sp.Size}, &out)
	var ae *apiError
	if p.b == SharedName && errors.As(err, &ae) && ae.status == 409 {
		// "Idempotent" by name: return whatever instance has it.
		i, err := p.lookup(ctx, sp, "name", name)
		if err != nil || i == nil {
			return nil, fmt.Errorf("name taken and not found: %v", err)
		}
		return toInstance(i), nil
	}
	if err != nil {
		return nil, err
	}
	return toInstance(&out.Instance), nil
}

func (p prov) Delete(ctx context.Context, m *provider.Machine) error {
	if p.key != ByUID {
		return p.keyedDelete(ctx, m)
	}
	_, sp, err := p.config(ctx, m.Spec)
	if err != nil {
		return err
	}
	if p.b == DeleteNoop {
		return nil
	}
	i, err := p.lookup(ctx, sp, "uid", m.UID)
	if err != nil {
		return err
	}
	if i == nil {
		if p.b == DeleteMissingFails {
			return provider.ErrInstanceNotFound
		}
		return nil
	}
	if p.b == DeleteNeverDone {
		return provider.DeletionInProgress(time.Second, "instance %s is being deleted", i.ID)
	}
	err = p.api(ctx, sp, "DELETE", "/v1/instances/"+i.ID, nil, nil)
	var ae *apiError
	if (errors.As(err, &ae) && ae.status == 404) || p.b == DeleteIgnoresErrors {
		return nil
	}
	return err
}

func (p prov) MachineMetricsLabels(ctx context.Context, m *provider.Machine) (map[string]string, error) {
	_, sp, err := p.config(ctx, m.Spec)
	if err != nil {
		return nil, err
	}
	if p.b == NoSizeLabel {
		return map[string]string{"instance_type": sp.Size}, nil
	}
	return map[string]string{"size": sp.Size}, nil
}

func (p prov) MigrateUID(ctx context.Context, m *provider.Machine, newUID string) error {
	if p.key != ByUID {
		return p.keyedMigrateUID(ctx, m, newUID)
	}
	_, sp, err := p.config(ctx, m.Spec)
	if err != nil {
		return err
	}
	if p.b == MigrateNoop {
		return nil
	}
	i, err := p.lookup(ctx, sp, "uid", m.UID)
	if err != nil || i == nil {
		return err
	}
	return p.api(ctx, sp, "PATCH", "/v1/instances/"+i.ID, map[string]any{"uid": newUID, "keepOldUID": p.b == MigrateKeepsOldUID}, nil)
}
