//go:build wasip1

package hosthttp

import "net/http"

// The default transport could never reach anything in the sandbox (see
// the package doc); this one reaches what the policy allows. Only on
// wasip1: in a host process (runtime/native) net/http's default is the
// process's own and stays so.
func init() { http.DefaultTransport = Transport }
