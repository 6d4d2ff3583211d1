//go:build !race

package precheck

const raceEnabled = false
