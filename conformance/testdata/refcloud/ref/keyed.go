package ref

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// Key says how a provider finds a Machine's instance.
type Key string

// The ways to find an instance. The conformance suite must pass a correct
// provider of each kind in the stateful profile: it hands every call the
// Machine as the provider's machine_update calls left it.
const (
	// ByUID finds the instance by the Machine's UID, which the cloud
	// stores with it (the reference provider).
	ByUID Key = ""
	// ByAnnotation records the instance ID in an annotation of the
	// Machine in Create and finds it there; it keeps a finalizer of its
	// own while the instance exists.
	ByAnnotation Key = "annotation"
	// ByProviderID records the instance in spec.providerID.
	ByProviderID Key = "providerID"
)

// Annotation is where ByAnnotation keeps the instance ID.
const Annotation = "minicloud.wasmprov.test/instance-id"

// Finalizer is ByAnnotation's finalizer.
const Finalizer = "minicloud.wasmprov.test/instance"

const providerIDPrefix = "minicloud://"

// ForgetsKey is a bug of a keyed provider: Create records nothing on the
// Machine, so Get never finds the instance.
const ForgetsKey Break = "forgets-key"

// RegisterKeyed registers a correct provider that finds instances by k,
// with bug b. It resolves its token as a config var, so a spec may hold it
// in a Secret (secretKeyRef).
func RegisterKeyed(k Key, b Break) {
	provider.Register(prov{b: b, key: k}, provider.Needs(abi.CapHTTP, abi.CapMachineUpdate, abi.CapConfigVar))
}

// resolveToken sets sp.token from sp.Token: a JSON string as it is; an
// object (secretKeyRef, …) through config_var, which only keyed providers
// declare.
func (p prov) resolveToken(ctx context.Context, sp *Spec) error {
	if len(sp.Token) == 0 || string(sp.Token) == "null" {
		return nil
	}
	if err := json.Unmarshal(sp.Token, &sp.token); err == nil {
		return nil
	}
	if p.key == ByUID {
		return provider.Terminal(provider.InvalidConfiguration, "token must be a string")
	}
	tok, err := provider.ConfigVarString(ctx, sp.Token, "")
	if err != nil {
		return fmt.Errorf("resolving token: %w", err)
	}
	sp.token = tok
	return nil
}

// keyOf returns the instance ID recorded on m, or "".
func (p prov) keyOf(m *provider.Machine) string {
	if p.key == ByAnnotation {
		return m.Annotations[Annotation]
	}
	if m.Spec.ProviderID != nil {
		return strings.TrimPrefix(*m.Spec.ProviderID, providerIDPrefix)
	}
	return ""
}

// byID reads an instance; nil if the cloud has none.
func (p prov) byID(ctx context.Context, sp Spec, id string) (*instance, error) {
	var out struct {
		Instance instance `json:"instance"`
	}
	err := p.api(ctx, sp, "GET", "/v1/instances/"+id, nil, &out)
	var ae *apiError
	if errors.As(err, &ae) && ae.status == 404 {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &out.Instance, nil
}

func (p prov) keyedGet(ctx context.Context, m *provider.Machine) (*provider.Instance, error) {
	_, sp, err := p.config(ctx, m.Spec)
	if err != nil {
		return nil, err
	}
	id := p.keyOf(m)
	if id == "" {
		return nil, provider.ErrInstanceNotFound
	}
	i, err := p.byID(ctx, sp, id)
	if err != nil {
		return nil, err
	}
	if i == nil {
		return nil, provider.ErrInstanceNotFound
	}
	return toInstance(i), nil
}

func (p prov) keyedCreate(ctx context.Context, m *provider.Machine) (*provider.Instance, error) {
	_, sp, err := p.config(ctx, m.Spec)
	if err != nil {
		return nil, err
	}
	if id := p.keyOf(m); id != "" {
		if i, err := p.byID(ctx, sp, id); err != nil || i != nil {
			if err != nil {
				return nil, err
			}
			return toInstance(i), nil
		}
	}
	if p.key == ByAnnotation && !m.HasFinalizer(Finalizer) {
		if _, err := provider.AddFinalizer(ctx, Finalizer); err != nil {
			return nil, fmt.Errorf("adding finalizer: %w", err)
		}
	}
	var out struct {
		Instance instance `json:"instance"`
	}
	err = p.api(ctx, sp, "POST", "/v1/instances", map[string]string{"name": m.Name, "uid": m.UID, "size": sp.Size}, &out)
	var ae *apiError
	if errors.As(err, &ae) && ae.status == 409 {
		// The name is taken: by this Machine's own instance, if an
		// earlier Create made it and lost the response before recording
		// it on the Machine. Adopt it then; anything else stays an error.
		i, lerr := p.lookup(ctx, sp, "name", m.Name)
		if lerr != nil {
			return nil, lerr
		}
		if i == nil || i.UID != m.UID {
			return nil, err
		}
		out.Instance, err = *i, nil
	}
	if err != nil {
		return nil, err
	}
	id := out.Instance.ID
	if p.b != ForgetsKey {
		u := provider.MachineUpdate{}
		if p.key == ByAnnotation {
			u.Annotations = map[string]*string{Annotation: &id}
		} else {
			pid := providerIDPrefix + id
			u.ProviderID = &pid
		}
		if _, err := provider.UpdateMachine(ctx, u); err != nil {
			return nil, fmt.Errorf("recording instance %s on the Machine: %w", id, err)
		}
	}
	return toInstance(&out.Instance), nil
}

func (p prov) keyedDelete(ctx context.Context, m *provider.Machine) error {
	_, sp, err := p.config(ctx, m.Spec)
	if err != nil {
		return err
	}
	if id := p.keyOf(m); id != "" {
		err := p.api(ctx, sp, "DELETE", "/v1/instances/"+id, nil, nil)
		var ae *apiError
		if err != nil && !(errors.As(err, &ae) && ae.status == 404) {
			return err
		}
	}
	if p.key == ByAnnotation && m.HasFinalizer(Finalizer) {
		if _, err := provider.RemoveFinalizer(ctx, Finalizer); err != nil {
			return fmt.Errorf("removing finalizer: %w", err)
		}
	}
	return nil
}

// keyedMigrateUID keeps the cloud's record of the UID current; the
// instance is found by its key either way.
func (p prov) keyedMigrateUID(ctx context.Context, m *provider.Machine, newUID string) error {
	_, sp, err := p.config(ctx, m.Spec)
	if err != nil {
		return err
	}
	id := p.keyOf(m)
	if id == "" {
		return nil
	}
	err = p.api(ctx, sp, "PATCH", "/v1/instances/"+id, map[string]string{"uid": newUID}, nil)
	var ae *apiError
	if errors.As(err, &ae) && ae.status == 404 {
		return nil
	}
	return err
}
