// Package wait waits, in tests, for what another goroutine or process
// brings about: a server ready, a reload applied, instances reaped.
//
// It polls on a ticker until the condition holds or the test's own
// deadline (go test -timeout) is near; there is no fixed timeout of its
// own, so a loaded machine makes a test slower, never failed, and a
// condition that never comes fails with what was last seen rather than a
// panic's goroutine dump.
package wait

import (
	"testing"
	"time"
)

// Interval is how often a condition is polled.
const Interval = 10 * time.Millisecond

// For polls cond until it reports true and fails tb, naming what and the
// last state cond reported, when the test's deadline is a few seconds
// away. cond must not block.
func For(tb testing.TB, what string, cond func() (ok bool, state string)) {
	tb.Helper()
	if err := until(tb, cond); err != "" {
		tb.Fatalf("gave up waiting for %s before the test's deadline; last state: %s", what, err)
	}
}

// Until is For for a condition with nothing to report.
func Until(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	For(tb, what, func() (bool, string) { return cond(), "(none reported)" })
}

// until polls cond; it returns "" once cond holds, else cond's last state
// when the deadline is near.
func until(tb testing.TB, cond func() (bool, string)) string {
	giveUp := giveUpAt(tb)
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return ""
		}
		if !giveUp.IsZero() && !time.Now().Before(giveUp) {
			if state == "" {
				state = "(empty)"
			}
			return state
		}
		<-tick.C
	}
}

// giveUpAt is a moment before tb's deadline that leaves time to report
// and clean up: 5% of what is left, at least 2 s, at most 30 s. Zero when
// the test has no deadline (go test -timeout 0): then For waits for ever.
func giveUpAt(tb testing.TB) time.Time {
	t, ok := tb.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return time.Time{}
	}
	d, ok := t.Deadline()
	if !ok {
		return time.Time{}
	}
	margin := min(max(time.Until(d)/20, 2*time.Second), 30*time.Second)
	return d.Add(-margin)
}
