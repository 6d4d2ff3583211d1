package hzprovider

import (
	"context"
	"fmt"
	"time"
)

// API is the part of the Hetzner Cloud API the provider uses. Two
// implementations exist: package hzrest (encoding/json over the host's
// HTTP, in the hetzner example) and one over the official hcloud-go SDK (in
// the hetzner-hcloudgo example). Both return *APIError for an error answer
// of the API, and any other error for a transport or decoding failure.
//
// Lookups that find nothing return (nil, nil).
type API interface {
	Location(ctx context.Context, name string) (*Location, error)
	Datacenter(ctx context.Context, name string) (*Datacenter, error)
	ServerType(ctx context.Context, name string) (*ServerType, error)
	// Image finds an image by ID, or by name for an architecture.
	Image(ctx context.Context, idOrName, architecture string) (*Image, error)

	CreateSSHKey(ctx context.Context, name, publicKey string, labels map[string]string) (int64, error)
	DeleteSSHKey(ctx context.Context, id int64) error
	// SSHKeys lists the keys matching a label selector.
	SSHKeys(ctx context.Context, labelSelector string) ([]int64, error)

	// Servers lists the servers matching a label selector, every page.
	Servers(ctx context.Context, labelSelector string) ([]*Server, error)
	ServerByName(ctx context.Context, name string) (*Server, error)
	// Server returns the server with the ID, nil when it does not exist.
	Server(ctx context.Context, id int64) (*Server, error)
	CreateServer(ctx context.Context, opts CreateServerOpts) (*Server, error)
	SetServerLabels(ctx context.Context, id int64, labels map[string]string) error
	// DeleteServer deletes a server and returns the ID of the action.
	DeleteServer(ctx context.Context, id int64) (int64, error)

	// DetachVolume detaches a volume and returns the ID of the action.
	DetachVolume(ctx context.Context, id int64) (int64, error)
	// Network and Firewall find one by name.
	Network(ctx context.Context, name string) (*Network, error)
	Firewall(ctx context.Context, name string) (*Firewall, error)
	// FloatingIP returns the address of a floating IP, "" when it does not
	// exist.
	FloatingIP(ctx context.Context, id int64) (string, error)

	// PlacementGroups lists the spread placement groups, every page.
	PlacementGroups(ctx context.Context) ([]*PlacementGroup, error)
	// PlacementGroup returns the group with the ID, nil when it does not
	// exist.
	PlacementGroup(ctx context.Context, id int64) (*PlacementGroup, error)
	CreatePlacementGroup(ctx context.Context, name string, labels map[string]string) (*PlacementGroup, error)
	DeletePlacementGroup(ctx context.Context, id int64) error

	// WaitForAction polls an action until it succeeds (nil), fails (an
	// error) or ctx ends.
	WaitForAction(ctx context.Context, id int64) error
}

// NewAPI returns an API client for an endpoint ("https://api.hetzner.cloud/v1")
// and a token.
type NewAPI func(endpoint, token string) API

// Location is a Hetzner location.
type Location struct {
	ID   int64
	Name string
}

// Datacenter is a Hetzner datacenter.
type Datacenter struct {
	ID       int64
	Name     string
	Location string
}

// ServerType is a Hetzner server type.
type ServerType struct {
	ID           int64
	Name         string
	Architecture string
}

// Image is a Hetzner image.
type Image struct {
	ID   int64
	Name string
}

// Network is a Hetzner private network.
type Network struct {
	ID   int64
	Name string
}

// Firewall is a Hetzner firewall.
type Firewall struct {
	ID   int64
	Name string
}

// PlacementGroup is a Hetzner placement group.
type PlacementGroup struct {
	ID      int64
	Name    string
	Servers int
}

// Server is what the provider needs of a Hetzner server.
type Server struct {
	ID         int64
	Name       string
	Status     string
	Labels     map[string]string
	PublicIPv4 string
	// PublicIPv6 is the server's /64 network, e.g. "2001:db8:1::/64".
	PublicIPv6 string
	PrivateIPs []string
	Volumes    []int64
	// FloatingIPs are the IDs of the floating IPs assigned to it.
	FloatingIPs []int64
	// PlacementGroup is its placement group's ID, 0 for none.
	PlacementGroup int64
	Datacenter     string
	Location       string
}

// CreateServerOpts are the arguments of CreateServer.
type CreateServerOpts struct {
	Name       string
	ServerType string
	Image      int64
	Location   string
	Datacenter string
	SSHKeys    []int64
	UserData   string
	Labels     map[string]string
	EnableIPv4 bool
	EnableIPv6 bool
	Networks   []int64
	Firewalls  []int64
	// PlacementGroup is 0 for none.
	PlacementGroup int64
}

// APIError is an error answer of the API.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Code is the API's error code ("unauthorized", "not_found", ...);
	// empty when the body was not an error object.
	Code    string
	Message string
	// RetryAfter is the wait the answer asked for (Retry-After, or derived
	// from the RateLimit-* headers of a 429), 0 when it gave none.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("hetzner API answered HTTP %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("hetzner API answered HTTP %d %s: %s", e.Status, e.Code, e.Message)
}

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool {
	e, ok := err.(*APIError)
	return ok && e.Status == 404
}
