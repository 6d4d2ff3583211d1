package runtime

import "net/http"

// WithHTTPClient makes every provider loaded by the Runtime send its
// http_do requests with c instead of a client built from
// http.DefaultTransport. The policy still decides which URLs are allowed
// (and c's CheckRedirect is replaced to re-check redirect targets).
//
// Tests use it to put a record/replay transport (package cassette) between
// a provider and its cloud.
func WithHTTPClient(c *http.Client) Option { return func(cfg *config) { cfg.httpClient = c } }
