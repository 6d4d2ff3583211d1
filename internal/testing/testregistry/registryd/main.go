// Command registryd is the registry behind package testregistry: the
// distribution project's own registry handler, in-memory storage, plain
// HTTP on 127.0.0.1. It runs in a process of its own so that a test binary
// built with -race does not link (and compile with -race) the
// distribution server and its ~350 packages; the test's side (TLS, the
// request count, the outage a test makes by closing the server) is a
// reverse proxy in the test process.
//
// It prints "listening HOST:PORT" once it accepts connections, and exits
// when its standard input closes — when the test process that started it
// ends, however it ends.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	"github.com/sirupsen/logrus"

	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
)

func main() {
	htpasswd := flag.String("htpasswd", "", "an htpasswd file: basic auth with its users")
	flag.Parse()
	// distribution logs every request, and every 404 (an ordinary answer
	// to a HEAD) as an error.
	logrus.SetOutput(io.Discard)

	cfg := &configuration.Configuration{
		Storage: configuration.Storage{
			"inmemory":    configuration.Parameters{},
			"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
		},
	}
	cfg.HTTP.Secret = "test-secret"
	// Upload locations relative to the request: the client resolves them
	// against the address it used, the test's proxy.
	cfg.HTTP.RelativeURLs = true
	cfg.Log.AccessLog.Disabled = true
	if *htpasswd != "" {
		cfg.Auth = configuration.Auth{"htpasswd": configuration.Parameters{"realm": "test", "path": *htpasswd}}
	}
	app := handlers.NewApp(context.Background(), cfg)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatalf("registryd: %v", err)
	}
	srv := &http.Server{Handler: app, ErrorLog: log.New(io.Discard, "", 0)}
	go func() {
		// Standard input closes when the parent ends: so does this process.
		_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		os.Exit(0)
	}()
	fmt.Printf("listening %s\n", ln.Addr())
	if err := srv.Serve(ln); err != nil {
		log.Fatalf("registryd: %v", err)
	}
}
