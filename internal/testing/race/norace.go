//go:build !race

// Package race tells tests whether the race detector is on, so a test that
// loads hundreds of provider versions or measures memory can scale its
// work or its bound: under -race, wazero's decoding and validation, the
// precheck and hashing run about 8 times slower, and the detector's shadow
// memory inflates RSS.
package race

// Enabled reports whether the binary was built with -race.
const Enabled = false
