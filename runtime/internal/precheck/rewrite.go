package precheck

import "github.com/wasmprov/wasmprov/runtime/internal/wasmbin"

// rewrite returns a copy of the module whose tables in c.rewrites have
// MaxTableEntries as maximum (tableBody) and whose data segments are
// merged (dataBody, when there are at least minMerges merges). Only those
// two sections change (and their sizes).
func (c *checker) rewrite() []byte {
	type replaced struct {
		s    wasmbin.Section
		body []byte
	}
	var rs []replaced // in the order of the sections: table, then data
	if len(c.rewrites) > 0 {
		rs = append(rs, replaced{c.tableSec, c.tableBody()})
	}
	if c.mergeData() {
		rs = append(rs, replaced{c.dataSec, c.dataBody()})
	}
	size := len(c.wasm)
	for _, r := range rs {
		size += len(r.body) - len(r.s.Body) + 5
	}
	out := make([]byte, 0, size)
	pos := 0
	for _, r := range rs {
		out = append(out, c.wasm[pos:r.s.Offset]...)
		out = append(out, byte(r.s.ID))
		out = wasmbin.AppendUint32(out, uint32(len(r.body)))
		out = append(out, r.body...)
		pos = r.s.End()
	}
	return append(out, c.wasm[pos:]...)
}

// mergeData reports whether the rewrite merges data segments.
func (c *checker) mergeData() bool { return !c.dataCount && c.merge.merges >= minMerges }

// tableBody is the table section with the tables in c.rewrites (in order)
// given MaxTableEntries as maximum: the flags get the has-max bit, the
// minimum stays as it was, the maximum is set or replaced.
func (c *checker) tableBody() []byte {
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
	return append(body, c.wasm[pos:s.End()]...)
}
