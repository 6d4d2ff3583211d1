// Command goplugin is benchprov as a hashicorp/go-plugin gRPC plugin
// process; the benchmark builds it and go-plugin starts it.
package main

import (
	"net/http"

	"github.com/hashicorp/go-plugin"
	"github.com/wasmprov/wasmprov/bench/internal/gp"
)

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: gp.Handshake,
		Plugins:         gp.PluginMap(gp.Impl{Client: &http.Client{Transport: http.DefaultTransport}}),
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
