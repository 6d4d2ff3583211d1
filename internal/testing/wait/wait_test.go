package wait

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int64
	For(t, "three polls", func() (bool, string) { return n.Add(1) >= 3, "" })
	if got := n.Load(); got != 3 {
		t.Fatalf("polled %d times, want 3", got)
	}
}

// fakeTB is a testing.TB whose deadline has passed and whose Fatalf is
// recorded, so a condition that never holds can be tested.
type fakeTB struct {
	testing.TB
	msg string
}

func (f *fakeTB) Helper()                           {}
func (f *fakeTB) Fatalf(format string, args ...any) { f.msg = format }
func (f *fakeTB) Deadline() (time.Time, bool)       { return time.Now().Add(-time.Second), true }

func TestForGivesUpNearTheDeadline(t *testing.T) {
	f := &fakeTB{TB: t}
	calls := 0
	For(f, "never", func() (bool, string) { calls++; return false, "still not" })
	if f.msg == "" || calls != 1 {
		t.Fatalf("after the deadline: Fatalf %q after %d polls; want it at once", f.msg, calls)
	}
}
