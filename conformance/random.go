package conformance

import (
	"fmt"

	"github.com/wasmprov/wasmprov/conformance/internal/randprobe"
	"github.com/wasmprov/wasmprov/runtime"
)

// checkRandomPerInstance loads a probe module twice on the run's runtime
// (its engine and options) and compares the random bytes the two
// instances draw. It checks the host, not the provider: what a provider
// makes of crypto/rand — a throw-away SSH key, a nonce, a name suffix — is
// only as unpredictable as the stream the host hands its instance.
func checkRandomPerInstance(t *T) error {
	probe := t.env.cfg.randomProbe
	if probe == nil {
		probe = randprobe.Wasm
	}
	var draws [2]string
	for i := range draws {
		p, err := t.env.rt.LoadBytes(t.ctx, fmt.Sprintf("%s-random-probe-%d", t.env.cfg.Name, i), probe,
			runtime.WithPolicy(runtime.Policy{PoolSize: 1}))
		if err != nil {
			return failf("the random probe module did not load on this runtime: %s", describe(err))
		}
		ctx, cancel := t.call()
		labels, err := p.MachineMetricsLabels(ctx, t.machine(i), nil)
		cancel()
		_ = p.Close(t.ctx)
		if err != nil {
			return failf("the random probe module failed: %s", describe(err))
		}
		draws[i] = labels["size"]
	}
	if draws[0] == draws[1] {
		return failf("two instances drew the same 16 bytes from WASI random_get (%s): this host hands every instance the same "+
			"\"random\" stream, so every provider's generated keys are predictable; run on a runtime whose random_get reads "+
			"crypto/rand (wasmprov's runtime always does)", draws[0])
	}
	return nil
}
