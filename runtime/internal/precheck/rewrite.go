package precheck

import "github.com/wasmprov/wasmprov/runtime/internal/wasmbin"

// rewriteTables returns a copy of the module whose tables in c.rewrites
// (in the table section, in order) have MaxTableEntries as maximum: the
// flags get the has-max bit, the minimum stays as it was, the maximum is
// set or replaced. Only the table section changes (and its size).
func (c *checker) rewriteTables() []byte {
	s := c.tableSec
	max := uint64(c.l.MaxTableEntries)
	body := make([]byte, 0, len(s.Body)+len(c.rewrites)*6)
	pos := s.BodyOffset // next byte of the module to copy
	for _, lim := range c.rewrites {
		body = append(body, c.wasm[pos:lim.FlagsOffset]...)
		body = append(body, lim.Flags|wasmbin.LimitsHasMax)
		minEnd := lim.End
		if lim.HasMax() {
			minEnd = lim.MaxOffset
		}
		body = append(body, c.wasm[lim.MinOffset:minEnd]...)
		body = wasmbin.AppendUint64(body, max)
		pos = lim.End
	}
	body = append(body, c.wasm[pos:s.End()]...)

	out := make([]byte, 0, len(c.wasm)+len(body)-len(s.Body)+5)
	out = append(out, c.wasm[:s.Offset]...)
	out = append(out, wasmbin.SectionIDTable)
	out = wasmbin.AppendUint32(out, uint32(len(body)))
	out = append(out, body...)
	return append(out, c.wasm[s.End():]...)
}
