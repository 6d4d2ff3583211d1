package runtime

import "net/http"

// WithHTTPTransport puts wrap's round tripper between every provider of the
// Runtime and the network: wrap receives the policy's own transport, which
// refuses loopback, private, link-local and metadata addresses at connect
// time, and returns the round tripper that sends http_do requests. wrap is
// called once for each provider version loaded, with that version's
// transport; Provider.Close drops that transport's idle connections, not
// those of what wrap returns, which may be shared between providers.
//
// Every request still passes the provider's policy first — scheme, allowed
// hosts and ports, body and header sizes, redirects (each re-checked) and
// the call's deadline. The connect-time address checks, though, are in the
// transport wrap is given: a wrapper that sends requests without it is
// trusted to reach only what it should. Tests use it for record/replay
// (package cassette): a replayer answers from a file and dials nothing.
func WithHTTPTransport(wrap func(policyTransport http.RoundTripper) http.RoundTripper) Option {
	return func(cfg *config) { cfg.wrapTransport = wrap }
}
