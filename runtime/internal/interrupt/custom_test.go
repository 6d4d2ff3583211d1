package interrupt

import (
	"bytes"
	"slices"
	"testing"

	"github.com/wasmprov/wasmprov/runtime/metadata"
)

// TestInstrumentSharesModulesDifferingInCustomSections: one Go guest
// annotated with two provider names, and once more with a custom section
// of another kind, instruments to the same bytes in both modes, so that an
// engine keying compiled code by the bytes it compiles (wazero: sha256)
// compiles it once for all of them. The name section, which trap
// backtraces read, is still there.
func TestInstrumentSharesModulesDifferingInCustomSections(t *testing.T) {
	guest := goGuest(t)
	a, err := metadata.Write(guest, &metadata.Metadata{Name: "provider-a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := metadata.Write(guest, &metadata.Metadata{Name: "provider-b", Version: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	c := append(bytes.Clone(a), mod(sec(0, append([]byte{9}, "producers"...)...))[8:]...)
	if bytes.Equal(a, b) {
		t.Fatal("the annotated modules are identical: the test proves nothing")
	}
	for _, f := range []Flag{FlagMemory, FlagBudget} {
		var outs [][]byte
		for _, wasm := range [][]byte{a, b, c} {
			out, err := InstrumentWith(wasm, f)
			if err != nil {
				t.Fatalf("flag %d: %v", f, err)
			}
			outs = append(outs, out)
		}
		if !bytes.Equal(outs[0], outs[1]) || !bytes.Equal(outs[0], outs[2]) {
			t.Errorf("flag %d: modules differing only in custom sections instrument differently", f)
		}
		if names, _ := customSections(t, outs[0]); !slices.Equal(names, []string{"name"}) {
			t.Errorf("flag %d: custom sections %q, want the name section only", f, names)
		}
	}
}
