package hzprovider

import (
	"errors"
	"fmt"
	"time"

	"github.com/wasmprov/wasmprov/guests/go/provider"
)

// classify turns an API failure into the error class machine-controller
// acts on: bad credentials or a refused request are terminal, a rate limit
// or server error is transient with a retry hint, anything else (network,
// garbage answers) is transient.
func classify(err error, msg string) error {
	var ae *APIError
	if !errors.As(err, &ae) {
		return fmt.Errorf("%s: %w", msg, err)
	}
	switch {
	case ae.Status == 401:
		return provider.Terminal(provider.InvalidConfiguration,
			"%s: a request has been rejected due to invalid credentials which were taken from the MachineSpec (%v)", msg, ae)
	case ae.Status == 403 && ae.Code == "resource_limit_exceeded":
		return provider.Terminal(provider.InsufficientResources, "%s: %v", msg, ae)
	case ae.Status == 403:
		return provider.Terminal(provider.InvalidConfiguration, "%s: %v", msg, ae)
	case ae.Status == 400 || ae.Status == 422:
		return provider.Terminal(provider.InvalidConfiguration, "%s: %v", msg, ae)
	case ae.Status == 429:
		d := ae.RetryAfter
		if d <= 0 {
			d = time.Second // Hetzner refills one request per second
		}
		return &provider.RetryableError{RetryAfter: d, Err: fmt.Errorf("%s: %w", msg, ae)}
	case ae.Status >= 500:
		d := ae.RetryAfter
		if d <= 0 {
			d = 5 * time.Second
		}
		return &provider.RetryableError{RetryAfter: d, Err: fmt.Errorf("%s: %w", msg, ae)}
	}
	return fmt.Errorf("%s: %w", msg, ae)
}
