package conformance

// WithRandomProbe returns cfg with the random probe module replaced, for
// the test that shows sandbox.random-per-instance can fail.
func WithRandomProbe(cfg Config, wasm []byte) Config {
	cfg.randomProbe = wasm
	return cfg
}
