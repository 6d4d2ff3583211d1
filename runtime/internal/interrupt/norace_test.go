//go:build !race

package interrupt

const raceEnabled = false
