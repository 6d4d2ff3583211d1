package doprovider

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/digitalocean/godo"

	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// statusOf is the HTTP status of a failed godo call: 0 when the API never
// answered (a transport failure, a refused request, an undecodable body).
// It reads the error, never a *godo.Response that a failed transport left
// nil (upstream's rsp.StatusCode panics there).
func statusOf(err error) (int, *http.Response) {
	var er *godo.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode, er.Response
	}
	return 0, nil
}

func isNotFound(err error) bool {
	status, _ := statusOf(err)
	return status == http.StatusNotFound
}

// classify turns a failed API call into the error class machine-controller
// acts on: rejected credentials are terminal, as upstream's
// doStatusAndErrToTerminalError makes them, and so is a token without the
// permission (403); a rate limit or server error is transient with a retry
// hint; anything else (network, 404, 422, garbage answers) is a plain
// error the controller retries.
func classify(err error, msg string) error {
	status, resp := statusOf(err)
	switch {
	case status == http.StatusUnauthorized:
		return provider.Terminal(provider.InvalidConfiguration,
			"%s: a request has been rejected due to invalid credentials which were taken from the MachineSpec (%v)", msg, err)
	case status == http.StatusForbidden:
		return provider.Terminal(provider.InvalidConfiguration, "%s: the token may not do this (%v)", msg, err)
	case status == http.StatusTooManyRequests:
		return &provider.RetryableError{RetryAfter: retryAfter(resp, time.Second), Err: fmt.Errorf("%s: %w", msg, err)}
	case status >= 500:
		return &provider.RetryableError{RetryAfter: retryAfter(resp, 5*time.Second), Err: fmt.Errorf("%s: %w", msg, err)}
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// retryAfter is the answer's Retry-After (DigitalOcean sends it with a 429
// of its burst limit), else, once the hourly budget is spent, the time
// until RateLimit-Reset; at least def.
func retryAfter(resp *http.Response, def time.Duration) time.Duration {
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if resp.Header.Get("RateLimit-Remaining") == "0" {
		if reset, err := strconv.ParseInt(resp.Header.Get("RateLimit-Reset"), 10, 64); err == nil {
			if d := time.Until(time.Unix(reset, 0)); d > def {
				return d
			}
		}
	}
	return def
}
