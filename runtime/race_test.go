//go:build race

package runtime

// raceEnabled: the race detector makes a provider load (wazero's decoding
// and validation, the precheck, hashing) about 8 times slower; the tests
// that load hundreds of versions load fewer.
const raceEnabled = true
