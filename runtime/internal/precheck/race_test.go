//go:build race

package precheck

// raceEnabled: the race detector slows Check and wazero's compiler
// several-fold; the tests that time or compile scale down.
const raceEnabled = true
