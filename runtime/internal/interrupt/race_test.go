//go:build race

package interrupt

// raceEnabled: the race detector keeps shadow memory for every byte the
// process writes, wazero's stack included, so a memory measure reads
// about 2.5 times higher.
const raceEnabled = true
