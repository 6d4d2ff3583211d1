package wasmbin

import "testing"

// FuzzWalker: no input makes the section iterator or the walker panic,
// and the instructions the walker returns tile the bytes it read.
func FuzzWalker(f *testing.F) {
	f.Add([]byte{0x02, 0x40, 0x0e, 0x01, 0x00, 0x00, 0x0b, 0x0b})
	f.Add([]byte{0x1f, 0x40, 0x01, 0x00, 0x00, 0x00, 0x0b, 0x0b})
	f.Add([]byte{0xfd, 0x0c, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0x0b})
	f.Add([]byte{0xfe, 0x01, 0x02, 0x00, 0x0b})
	f.Fuzz(func(t *testing.T, b []byte) {
		w := NewWalker(b, 0)
		pos := 0
		for {
			var in Instruction
			ok, err := w.Next(&in)
			if err != nil || !ok {
				break
			}
			if in.Offset != pos || in.End <= pos || in.End > len(b) {
				t.Fatalf("instruction [%d, %d) after %d", in.Offset, in.End, pos)
			}
			pos = in.End
			in.Targets(func(uint32) bool { return true })
			in.Catches(func(Catch) bool { return true })
		}
		it, err := NewSections(append([]byte(Magic+Version), b...))
		if err != nil {
			t.Fatal(err)
		}
		for {
			var s Section
			ok, err := it.Next(&s)
			if err != nil || !ok {
				break
			}
			r := s.Reader()
			_, _ = r.ReadImport()
			r = s.Reader()
			_, _ = r.ReadElementSegment()
			r = s.Reader()
			_, _ = r.ReadCode()
			r = s.Reader()
			_, _ = r.ReadTable()
			r = s.Reader()
			_, _ = r.ReadDataSegment()
		}
	})
}
