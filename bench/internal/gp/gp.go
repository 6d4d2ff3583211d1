// Package gp is benchprov as a hashicorp/go-plugin gRPC plugin: the
// handshake, the plugin set, and a hand-written gRPC service (no protoc
// needed) whose messages are protobuf BytesValue carrying JSON, as a
// go-plugin provider interface would carry Machine objects.
package gp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/hashicorp/go-plugin"
	"github.com/wasmprov/wasmprov/bench/benchprov"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Handshake is the go-plugin handshake of the benchmark plugin.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "WASMPROV_BENCH_PLUGIN",
	MagicCookieValue: "benchprov",
}

// Provider is what the host calls.
type Provider interface {
	Empty(ctx context.Context) error
	// Validate takes the MachineSpec as JSON.
	Validate(ctx context.Context, specJSON []byte) error
	// Create takes the Machine as JSON and returns the Instance as JSON.
	Create(ctx context.Context, machineJSON []byte) ([]byte, error)
}

// Plugin is the go-plugin plugin; Impl is set on the plugin side only.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Provider
}

// PluginMap is the plugin set.
func PluginMap(impl Provider) map[string]plugin.Plugin {
	return map[string]plugin.Plugin{"benchprov": &Plugin{Impl: impl}}
}

// GRPCServer registers the service.
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&serviceDesc, p.Impl)
	return nil
}

// GRPCClient returns the host-side client.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &client{c}, nil
}

type client struct{ cc *grpc.ClientConn }

func (c *client) call(ctx context.Context, method string, in []byte) ([]byte, error) {
	out := new(wrapperspb.BytesValue)
	if err := c.cc.Invoke(ctx, "/benchprov.Provider/"+method, wrapperspb.Bytes(in), out); err != nil {
		return nil, err
	}
	return out.Value, nil
}

func (c *client) Empty(ctx context.Context) error { _, err := c.call(ctx, "Empty", nil); return err }
func (c *client) Validate(ctx context.Context, spec []byte) error {
	_, err := c.call(ctx, "Validate", spec)
	return err
}
func (c *client) Create(ctx context.Context, m []byte) ([]byte, error) {
	return c.call(ctx, "Create", m)
}

func handler(f func(Provider, context.Context, []byte) ([]byte, error)) func(any, context.Context, func(any) error, grpc.UnaryServerInterceptor) (any, error) {
	return func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.BytesValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		out, err := f(srv.(Provider), ctx, in.Value)
		if err != nil {
			return nil, err
		}
		return wrapperspb.Bytes(out), nil
	}
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: "benchprov.Provider",
	HandlerType: (*Provider)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Empty", Handler: handler(func(p Provider, ctx context.Context, _ []byte) ([]byte, error) {
			return nil, p.Empty(ctx)
		})},
		{MethodName: "Validate", Handler: handler(func(p Provider, ctx context.Context, in []byte) ([]byte, error) {
			return nil, p.Validate(ctx, in)
		})},
		{MethodName: "Create", Handler: handler(func(p Provider, ctx context.Context, in []byte) ([]byte, error) {
			return p.Create(ctx, in)
		})},
	},
	Metadata: "benchprov.proto",
}

// Impl is the plugin-side implementation: benchprov behind JSON, with its
// own HTTP client (a go-plugin plugin is a process with network access).
type Impl struct{ Client *http.Client }

// Empty does nothing.
func (Impl) Empty(context.Context) error { return nil }

// Validate decodes the spec and validates its provider spec.
func (Impl) Validate(_ context.Context, specJSON []byte) error {
	var spec benchprov.MachineSpec
	if err := json.Unmarshal(specJSON, &spec); err != nil {
		return err
	}
	return benchprov.Validate(spec.ProviderSpec.Value)
}

// Create decodes the Machine and creates the instance.
func (i Impl) Create(ctx context.Context, machineJSON []byte) ([]byte, error) {
	var m benchprov.Machine
	if err := json.Unmarshal(machineJSON, &m); err != nil {
		return nil, err
	}
	if i.Client == nil {
		return nil, errors.New("no http client")
	}
	inst, err := benchprov.Create(ctx, i.Client, m.ObjectMeta.Name, m.ObjectMeta.UID, m.Spec.ProviderSpec.Value)
	if err != nil {
		return nil, err
	}
	return json.Marshal(inst)
}
