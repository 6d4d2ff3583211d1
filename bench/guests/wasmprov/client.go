//go:build !benchjsonhttp

package main

import (
	"net/http"

	"github.com/wasmprov/wasmprov/guests/go/hosthttp"
)

// httpClient is the SDK's: hosthttp over http_do_bin.
func httpClient() *http.Client { return hosthttp.Client() }
