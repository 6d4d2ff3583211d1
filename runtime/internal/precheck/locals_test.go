package precheck

import (
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/internal/testing/race"
)

// The red team's compile bomb of issue 25 (item 3): one function within
// every other limit, 250 KiB of local-to-local arithmetic over 9,999
// locals, took wazero 2.0-2.6 s to compile (120 of them, 29 MiB: 4-5
// minutes). It is refused by MaxLocalsWork, promptly; the most locals the
// same body may have pass, one more is refused, and a module of such
// functions passes up to MaxModuleLocalsWork.
func TestRealTimeLocalsBomb(t *testing.T) {
	const size = 250 << 10
	bomb := funcsModule(shapeLocalsArith(9_999, size))
	start := time.Now()
	_, err := Check(bomb, Limits{})
	took := time.Since(start)
	var r *Rejection
	if !errors.As(err, &r) || r.Limit != "MaxLocalsWork" {
		t.Fatalf("the red team's function: %v, want a MaxLocalsWork rejection", err)
	}
	bound := 10 * time.Millisecond
	if race.Enabled {
		bound *= 10
	}
	if took > bound {
		t.Errorf("refused in %v, want < %v", took, bound)
	}
	t.Logf("9,999 locals: refused in %v: %v", took, err)

	// The most locals that pass with as much arithmetic as MaxInstructions
	// allows whatever their number (220,000 bytes: with one-byte local
	// indices, 250 KiB would be over it).
	const under = 220_000
	limitOf := func(wasm []byte) string {
		_, err := Check(wasm, Limits{})
		if err == nil {
			return ""
		}
		if !errors.As(err, &r) {
			t.Fatalf("not a rejection: %v", err)
		}
		return r.Limit
	}
	most := sort.Search(9_999, func(n int) bool { return limitOf(funcsModule(shapeLocalsArith(n+1, under))) != "" })
	if most < 16 {
		t.Fatalf("only %d locals pass", most)
	}
	fn := shapeLocalsArith(most, under)
	if l := limitOf(funcsModule(fn)); l != "" {
		t.Fatalf("%d locals: refused by %s", most, l)
	}
	if l := limitOf(funcsModule(shapeLocalsArith(most+1, under))); l != "MaxLocalsWork" {
		t.Fatalf("%d locals: refused by %q, want MaxLocalsWork", most+1, l)
	}
	st, _ := Measure(funcsModule(fn))
	t.Logf("at most %d locals in %d bytes of arithmetic: locals work %d (limit %d)", most, under, st.MaxLocalsWork, DefaultLimits.MaxLocalsWork)

	// As many of those as MaxModuleLocalsWork allows, then one more.
	n := DefaultLimits.MaxModuleLocalsWork / st.LocalsWork
	codes := make([][]byte, n+1)
	for i := range codes {
		codes[i] = fn
	}
	if l := limitOf(funcsModule(codes[:n]...)); l != "" {
		t.Fatalf("%d functions: refused by %s", n, l)
	}
	if l := limitOf(funcsModule(codes...)); l != "MaxModuleLocalsWork" {
		t.Fatalf("%d functions: refused by %q, want MaxModuleLocalsWork", n+1, l)
	}
	t.Logf("%d such functions pass (%d MiB), %d do not", n, len(funcsModule(codes[:n]...))>>20, n+1)
}
