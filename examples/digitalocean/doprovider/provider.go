// Package doprovider is machine-controller's DigitalOcean provider
// (upstream's pkg/cloudprovider/provider/digitalocean) written against the
// wasmprov guest SDK, with DigitalOcean's Go SDK, godo, making the API
// calls as upstream does: godo.NewClient over an oauth2 client, on
// net/http's default transport. It keeps upstream's behaviour and
// provider spec, and differs where the controller's contract asks for more
// (README.md lists each difference): Create finds a droplet it made
// before instead of making a second one, no call sleeps or retries, and a
// transport failure is an error, never a panic.
package doprovider

import (
	"context"

	"github.com/digitalocean/godo"
	"golang.org/x/oauth2"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/guests/go/provider"
)

const (
	// TokenEnv is the environment variable the token falls back to, as
	// upstream's; the host answers it only if its policy allows it.
	TokenEnv = "DO_TOKEN"
	// DropletIDAnnotation records the droplet's ID on the Machine: Get
	// finds a droplet whose tags DigitalOcean has not applied yet by it.
	DropletIDAnnotation = "digitalocean.wasmprov.io/droplet-id"
	// TempKeyPrefix starts the name of the throw-away SSH keys Create
	// uploads: TempKeyPrefix + UID + "-" + random hex.
	TempKeyPrefix = "wasmprov-tmp-"
	// perPage is the page size of every listing (DigitalOcean's maximum).
	perPage = 200
)

// Capabilities the provider needs: HTTP for the API, config_var for the
// token and the other values, machine_update for the droplet ID
// annotation, clock for the rate limit's reset time and random for the
// temporary SSH key.
var Capabilities = []abi.Capability{abi.CapHTTP, abi.CapConfigVar, abi.CapMachineUpdate, abi.CapClock, abi.CapRandom}

// Provider is the DigitalOcean provider.
type Provider struct{}

// Register registers a Provider with the capabilities it needs.
func Register() { provider.Register(&Provider{}, provider.Needs(Capabilities...)) }

// tokenSource hands godo's oauth2 client the Machine's token, as
// upstream's TokenSource does.
type tokenSource struct{ token string }

func (t tokenSource) Token() (*oauth2.Token, error) { return &oauth2.Token{AccessToken: t.token}, nil }

// newClient is upstream's getClient: godo over an oauth2 client, whose
// transport is net/http's default (the host's http_do in the guest). Not
// godo.NewFromToken, which would retry and sleep inside a call.
func newClient(ctx context.Context, token string) *godo.Client {
	return godo.NewClient(oauth2.NewClient(ctx, tokenSource{token}))
}

// AddDefaults returns the spec unchanged, as upstream: the provider has no
// defaults.
func (p *Provider) AddDefaults(_ context.Context, spec provider.MachineSpec) (provider.MachineSpec, error) {
	return spec, nil
}

// GetCloudConfig returns no cloud config, as upstream did while the
// method existed.
func (p *Provider) GetCloudConfig(context.Context, provider.MachineSpec) (string, string, error) {
	return "", "", nil
}

// MachineMetricsLabels reports size and region from the spec, as
// upstream, with no API call.
func (p *Provider) MachineMetricsLabels(ctx context.Context, m *provider.Machine) (map[string]string, error) {
	c, err := getConfig(ctx, m.Spec, false)
	if err != nil {
		return map[string]string{}, err
	}
	return map[string]string{"size": c.Size, "region": c.Region}, nil
}
