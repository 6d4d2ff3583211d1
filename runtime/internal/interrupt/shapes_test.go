package interrupt

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// Hostile shapes: modules whose work between two loop headers or function
// entries is unbounded, for the placement's behaviour tests (hostile_test.go,
// wasmtime_test.go). Each exports run(n i32) -> i64, which does n iterations
// of its shape and returns a checksum, and spin, which never returns (it
// runs 2^32-1 iterations, or a tail-call chain as long).

// Types of every shape module.
const (
	tVoid = iota // () -> ()
	tRun         // (i32) -> (i64)
	tWork        // (i64 i64) -> (i64)
	tRec         // (i32) -> ()
	tTail        // (i64 i64 i32) -> (i64)
)

var shapeTypes = [][]byte{
	{0x60, 0, 0},
	{0x60, 1, 0x7f, 1, 0x7e},
	{0x60, 2, 0x7e, 0x7e, 1, 0x7e},
	{0x60, 1, 0x7f, 0},
	{0x60, 3, 0x7e, 0x7e, 0x7f, 1, 0x7e},
}

// Locals of run: n (the parameter), then acc, m (i64), one, sel (i32).
const (
	lN = iota
	lAcc
	lM
	lOne
	lSel
)

// Globals of every shape module: acc and m (mut i64).
const (
	gAcc = iota
	gM
)

type wfunc struct {
	typ    uint32
	locals []byte // the local declarations, count first
	code   []byte // the instructions, without the final end
}

type shapeModule struct {
	funcs  []wfunc // function 0 is run, 1 is spin
	pages  int     // memory pages (0: no memory)
	table  []uint32
	spin   []byte // spin's code (default: run(-1))
	extra  string // a note for the test's log
	tail   bool   // uses return_call (wazero needs the tail-call feature)
	rounds int    // the iterations run(n) is tested with
	// passive: a passive data segment (with a data count section), for
	// memory.init.
	passive []byte
	// maxPages: the memory's maximum (0: none).
	maxPages int
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func u(v uint64) []byte  { return wasmbin.AppendUint64(nil, v) }
func s64(v int64) []byte { return wasmbin.AppendInt64(nil, v) }

func localGet(i uint32) []byte  { return cat([]byte{0x20}, u(uint64(i))) }
func localSet(i uint32) []byte  { return cat([]byte{0x21}, u(uint64(i))) }
func globalGet(i uint32) []byte { return cat([]byte{0x23}, u(uint64(i))) }
func globalSet(i uint32) []byte { return cat([]byte{0x24}, u(uint64(i))) }
func i32c(v int64) []byte       { return cat([]byte{0x41}, s64(v)) }
func i64c(v int64) []byte       { return cat([]byte{0x42}, s64(v)) }
func call(f uint32) []byte      { return cat([]byte{0x10}, u(uint64(f))) }
func returnCall(f uint32) []byte {
	return cat([]byte{0x12}, u(uint64(f)))
}

var (
	opBlock = []byte{0x02, 0x40}
	opLoop  = []byte{0x03, 0x40}
	opIf    = []byte{0x04, 0x40}
	opElse  = []byte{0x05}
	opEnd   = []byte{0x0b}
	opMul   = []byte{0x7e}
	opSub32 = []byte{0x6b}
	opEqz32 = []byte{0x45}
	opDrop  = []byte{0x1a}
)

func br(l uint32) []byte   { return cat([]byte{0x0c}, u(uint64(l))) }
func brIf(l uint32) []byte { return cat([]byte{0x0d}, u(uint64(l))) }

// chain is k dependent multiplications of local acc by local m: 2k+2
// instructions, acc = acc * m^k. The multiplier is not a constant, which a
// compiler could fold.
func chain(acc, m uint32, k int) []byte {
	b := localGet(acc)
	for range k {
		b = append(b, localGet(m)...)
		b = append(b, opMul...)
	}
	return append(b, localSet(acc)...)
}

// globalChain is chain on globals.
func globalChain(acc, m uint32, k int) []byte {
	b := globalGet(acc)
	for range k {
		b = append(b, globalGet(m)...)
		b = append(b, opMul...)
	}
	return append(b, globalSet(acc)...)
}

// repeat is b n times.
func repeat(n int, b ...[]byte) []byte {
	one := cat(b...)
	return bytes.Repeat(one, n)
}

// runFunc is run(n): m = n | 3, one = n != 0, sel = one << 1, then n times
// body; it returns acc.
func runFunc(body []byte) wfunc {
	code := cat(
		i64c(1), localSet(lAcc),
		localGet(lN), []byte{0xad}, i64c(3), []byte{0x84}, localSet(lM), // i64.extend_i32_u; i64.or
		localGet(lN), i32c(0), []byte{0x47}, localSet(lOne), // i32.ne
		localGet(lOne), i32c(1), []byte{0x74}, localSet(lSel), // i32.shl
		opBlock, opLoop,
		localGet(lN), opEqz32, brIf(1),
		localGet(lN), i32c(1), opSub32, localSet(lN),
		body,
		br(0), opEnd, opEnd,
		localGet(lAcc),
	)
	return wfunc{typ: tRun, locals: []byte{2, 2, 0x7e, 2, 0x7f}, code: code}
}

// bytes assembles the module: types, functions, table, memory, globals,
// exports (run, spin, table), element segment, code.
func (m shapeModule) bytes() []byte {
	var secs [][]byte
	types := u(uint64(len(shapeTypes)))
	for _, t := range shapeTypes {
		types = append(types, t...)
	}
	secs = append(secs, sec(1, types...))
	funcs := append([]wfunc{}, m.funcs...)
	spin := m.spin
	if spin == nil {
		spin = cat(i32c(-1), call(0), opDrop)
	}
	funcs = append(funcs[:1], append([]wfunc{{typ: tVoid, locals: []byte{0}, code: spin}}, funcs[1:]...)...)
	fs := u(uint64(len(funcs)))
	for _, f := range funcs {
		fs = append(fs, u(uint64(f.typ))...)
	}
	secs = append(secs, sec(3, fs...))
	if m.table != nil {
		secs = append(secs, sec(4, cat([]byte{1, 0x70, 0x00}, u(uint64(len(m.table))))...))
	}
	if m.maxPages > 0 {
		secs = append(secs, sec(5, cat([]byte{1, 0x01}, u(uint64(m.pages)), u(uint64(m.maxPages)))...))
	} else if m.pages > 0 {
		secs = append(secs, sec(5, cat([]byte{1, 0x00}, u(uint64(m.pages)))...))
	}
	secs = append(secs, sec(6, 2, 0x7e, 0x01, 0x42, 1, 0x0b, 0x7e, 0x01, 0x42, 3, 0x0b))
	secs = append(secs, sec(7, 2, 3, 'r', 'u', 'n', 0x00, 0, 4, 's', 'p', 'i', 'n', 0x00, 1))
	if m.table != nil {
		el := cat([]byte{1, 0, 0x41, 0, 0x0b}, u(uint64(len(m.table))))
		for _, f := range m.table {
			el = append(el, u(uint64(f))...)
		}
		secs = append(secs, sec(9, el...))
	}
	if m.passive != nil {
		secs = append(secs, sec(12, 1))
	}
	code := u(uint64(len(funcs)))
	for _, f := range funcs {
		body := cat(f.locals, f.code, opEnd)
		code = append(code, u(uint64(len(body)))...)
		code = append(code, body...)
	}
	secs = append(secs, sec(10, code...))
	if m.passive != nil {
		secs = append(secs, sec(11, cat([]byte{1, 1}, u(uint64(len(m.passive))), m.passive)...))
	}
	return mod(secs...)
}

// shapes returns the hostile shapes; depth is the recursion depth of the
// recursive ones (wasmtime's stack is far smaller than wazero's); the
// straight-line stretches of the big ones are divided by div (compiling a
// function of a million instructions takes wazero ~10 s: the acceptance
// test runs them whole, the others a tenth).
func shapes(depth, div int) map[string]shapeModule {
	big := func(k int) wfunc { // (x, m) -> x * m^k
		code := localGet(0)
		for range k {
			code = append(code, localGet(1)...)
			code = append(code, opMul...)
		}
		return wfunc{typ: tWork, locals: []byte{0}, code: code}
	}
	callWork := func(f uint32) []byte { return cat(localGet(lAcc), localGet(lM), call(f), localSet(lAcc)) }
	out := map[string]shapeModule{
		// The red team's loop: 200,000 multiplications in one iteration.
		"unrolled": {funcs: []wfunc{runFunc(chain(lAcc, lM, 200_000/div))}, rounds: 3},
		// A loop-free function of a million instructions, called in a loop.
		"bigcall": {funcs: []wfunc{runFunc(callWork(2)), big(500_000 / div)}, rounds: 3},
		// Forward branches over the second half of each of 200 blocks,
		// where a check placed by counting instructions in order would
		// fall.
		"forward-br": {funcs: []wfunc{runFunc(repeat(200,
			opBlock, chain(lAcc, lM, 150), localGet(lOne), brIf(0), chain(lAcc, lM, 150), opEnd))}, rounds: 3},
		// br_table out of three nested blocks, past three stretches of
		// work, 100 times.
		"br_table": {funcs: []wfunc{runFunc(repeat(100,
			opBlock, opBlock, opBlock, chain(lAcc, lM, 100),
			localGet(lSel), []byte{0x0e, 3, 0, 1, 2, 2},
			chain(lAcc, lM, 100), opEnd, chain(lAcc, lM, 100), opEnd, chain(lAcc, lM, 100), opEnd))}, rounds: 3},
		// 200 ifs whose then branch is long and whose else is short.
		"if-else": {funcs: []wfunc{runFunc(repeat(200,
			localGet(lOne), opIf, chain(lAcc, lM, 150), opElse, chain(lAcc, lM, 1), opEnd))}, rounds: 3},
		// A recursion with 900 instructions after the recursive call:
		// unwinding runs depth x 900 instructions.
		"recursion-tail": recursion(depth, globalChain(gAcc, gM, 450)),
		// A recursion with nothing after the call: unwinding alone
		// takes ~25 ns a frame.
		"recursion-unwind": recursion(depth*20, nil),
		// Two functions that return_call each other forever, 900
		// instructions each, and no loop.
		"return_call": {funcs: []wfunc{
			runFunc(cat(localGet(lAcc), localGet(lM), i32c(100), call(2), localSet(lAcc))),
			tailFunc(3), tailFunc(2),
		}, spin: cat(i64c(1), i64c(3), i32c(-1), call(2), opDrop), tail: true, rounds: 3},
		// call_indirect to a 900-instruction function, in a loop-free
		// stretch of 300 calls.
		"call_indirect": {funcs: []wfunc{
			runFunc(repeat(300, localGet(lAcc), localGet(lM), i32c(0), []byte{0x11, tWork, 0}, localSet(lAcc))),
			big(450),
		}, table: []uint32{2}, rounds: 3},
		// Dependent loads that miss the caches and the TLB: a chain
		// through 256 MiB with a stride of 4160 bytes (run's first
		// iteration writes it), 1000 loads an iteration. The slowest
		// instructions per unit there are.
		"pointer-chase": {funcs: []wfunc{runFunc(cat(
			localGet(lAcc), i64c(1), []byte{0x51}, opIf, chaseInit(), opEnd, // i64.eq: the first iteration
			i64c(2), localSet(lAcc),
			localGet(lSel), repeat(1000/div, []byte{0x28, 2, 0}), localSet(lSel)))}, pages: 4096, rounds: 2},
		// 32 fills of 4 MiB without a loop header between them.
		"bulk": {funcs: []wfunc{runFunc(repeat(32,
			i32c(0), localGet(lN), i32c(4<<20), []byte{0xfc, 11, 0}))}, pages: 64, rounds: 2},
		// One bulk instruction an iteration, each of many MiB: run in
		// pieces (bulk.go). A fill of 256 MiB; a copy of 128 MiB; a
		// memory.init of a segment of 31 MiB (a module's data may total
		// 32 MiB); a memory grown from one page to 256 MiB and filled
		// once, every page touched for the first time (a page fault
		// each), after 2^20 iterations of 30 multiplications in spin
		// (~100 ms, so that the test's collections meet the fill) and in
		// run's last iteration.
		"fill-256MiB": {funcs: []wfunc{runFunc(cat(
			i32c(0), localGet(lN), i32c(256<<20), []byte{0xfc, 11, 0}))}, pages: 4096, rounds: 2},
		"copy-128MiB": {funcs: []wfunc{runFunc(cat(
			i32c(128<<20), i32c(0), i32c(128<<20), []byte{0xfc, 10, 0, 0}))}, pages: 4096, rounds: 2},
		"init-31MiB": {funcs: []wfunc{runFunc(cat(
			i32c(0), i32c(0), i32c(31<<20), []byte{0xfc, 8, 0, 0}))}, pages: 496, passive: bytes.Repeat([]byte{0xa5}, 31<<20), rounds: 2},
		"grow-fill-256MiB": {funcs: []wfunc{runFunc(cat(
			chain(lAcc, lM, 30),
			localGet(lN), i32c(1), []byte{0x46}, localGet(lN), i32c(-1<<20-1), []byte{0x46, 0x72}, opIf, // i32.eq; i32.or
			i32c(4095), []byte{0x40, 0}, i32c(-1), []byte{0x47}, opIf, // memory.grow; i32.ne
			i32c(0), i32c(1), i32c(256<<20), []byte{0xfc, 11, 0}, opEnd, opEnd))}, pages: 1, maxPages: 4096, rounds: 2},
	}
	return out
}

// recursion is a shape whose run calls a recursion depth deep (but no
// deeper than FlagBudget's stack bound allows, with a tenth to spare), with
// tail after the recursive call, in every frame.
func recursion(depth int, tail []byte) shapeModule {
	m := func(depth int) shapeModule {
		return shapeModule{funcs: []wfunc{
			runFunc(cat(localGet(lM), globalSet(gM), i32c(int64(depth)), call(2), globalGet(gAcc), localSet(lAcc))),
			{typ: tRec, locals: []byte{0}, code: cat(
				localGet(0), opIf, localGet(0), i32c(1), opSub32, call(2), opEnd, tail)},
		}, rounds: 2}
	}
	_, rep, err := instrumentWith(m(depth).bytes(), FlagBudget, options{budget: Budget, stack: StackLimit})
	if err != nil {
		panic(err)
	}
	// run, then depth+1 frames of the recursion (0 is the last).
	if most := int(StackLimit-rep.frames[0])/int(rep.frames[2]) - 1; depth > most*9/10 {
		depth = most * 9 / 10
	}
	return m(depth)
}

// chaseInit writes the pointer chain: word a holds (a + 4160) mod 256 MiB,
// for the 2^22 words a the chain visits from 0.
func chaseInit() []byte {
	const stride, size = 4160, 256 << 20
	// sel = 0; do { next = (sel + stride) & (size-1); mem[sel] = next;
	// sel = next } while sel != 0
	return cat(i32c(0), localSet(lSel), opLoop,
		localGet(lSel), localGet(lSel), i32c(stride), []byte{0x6a}, i32c(size-1), []byte{0x71}, // i32.add i32.and
		localSet(lOne), localGet(lOne), []byte{0x36, 2, 0}, // i32.store
		localGet(lOne), localSet(lSel),
		localGet(lSel), brIf(0), opEnd,
		i32c(1), localSet(lOne))
}

// tailFunc is (x, m, c) -> x * m^(450 c): c == 0 returns x; otherwise 450
// multiplications and return_call next with c - 1.
func tailFunc(next uint32) wfunc {
	code := cat(localGet(2), opEqz32, opIf, localGet(0), []byte{0x0f}, opEnd,
		chain(0, 1, 450),
		localGet(0), localGet(1), localGet(2), i32c(1), opSub32, returnCall(next))
	return wfunc{typ: tTail, locals: []byte{0}, code: code}
}

// ---- counting the instructions between checks ----

// CountGlobalName is the export of the instruction counter countInstructions
// adds.
const countGlobalName = "zz_count"

// countInstructions adds to a FlagBudget output, whose budget global is g
// (and stack counter g+1), an exported mutable i64 global
// (countGlobalName) that counts every instruction run but the structure
// (block, loop, if's else, end, try, catch...) and the instrumentation's
// own code: the checks (from global.get g through the end of the check's
// if) and the stack counter's entries, exits and landings (stack.go).
// Counting, not timing: what the guest runs between two yields is the
// count's difference.
func countInstructions(tb testing.TB, wasm []byte, g uint32) []byte {
	tb.Helper()
	c := g + 2 // the budget and the stack counter are the last globals
	inc := cat(globalGet(c), i64c(1), []byte{0x7c}, globalSet(c))
	var out []byte
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		secs := rawSections(tb, wasm)
		var rebuilt [][]byte
		sawGlobal := false
		for _, s := range secs {
			body := s.body
			switch s.id {
			case wasmbin.SectionIDGlobal:
				sawGlobal = true
				body = appendToVec(body, []byte{0x7e, 0x01, 0x42, 0, 0x0b})
			case wasmbin.SectionIDExport:
				body = appendToVec(body, exportEntry(countGlobalName, wasmbin.ExternGlobal, c))
			case wasmbin.SectionIDCode:
				body = countCode(body, g, inc)
			}
			rebuilt = append(rebuilt, append([]byte{s.id}, body...))
		}
		if !sawGlobal {
			return fmt.Errorf("no global section")
		}
		out = mod(rebuilt...)
		return nil
	}()
	if err != nil {
		tb.Fatalf("counting instructions: %v", err)
	}
	return out
}

// instr is a decoded instruction: its bytes, opcode and first immediate.
type instr struct {
	start, end int
	op         byte
	imm        uint32
}

// decodeBody decodes a function's instructions (after its locals).
func decodeBody(fr *reader) []instr {
	w := &rewriter{globals: noLimit, memories: noLimit}
	var out []instr
	for !fr.done() {
		in := instr{start: fr.pos()}
		in.op = fr.byte()
		switch in.op {
		case 0x03:
			fr.blockType()
		case 0x20, 0x21, 0x22, 0x23, 0x24:
			in.imm = fr.u32()
		default:
			w.immediates(fr, in.op)
		}
		in.end = fr.pos()
		out = append(out, in)
	}
	return out
}

// stackCode returns the number of instructions of the stack counter's
// code (global s) starting at ins[0], 0 if none does: an entry, an exit or
// a landing. (The counter's test is in the checks.)
func stackCode(ins []instr, s uint32) int {
	is := func(i int, op byte) bool { return i < len(ins) && ins[i].op == op }
	setS := func(i int) bool { return is(i, 0x24) && ins[i].imm == s }
	getS := func(i int) bool { return is(i, 0x23) && ins[i].imm == s }
	switch {
	case getS(0) && is(1, 0x41) && is(2, 0x6b) && setS(3): // entry
		return 4
	case getS(0) && is(1, 0x41) && is(2, 0x6b) && is(3, 0x22) && setS(4): // entry, saved
		return 5
	case (getS(0) || is(0, 0x20)) && is(1, 0x41) && is(2, 0x6a) && setS(3): // exit
		return 4
	case is(0, 0x20) && setS(1): // landing
		return 2
	}
	return 0
}

func countCode(body []byte, g uint32, inc []byte) []byte {
	r := newReader(body)
	n := r.u32()
	out := wasmbin.AppendUint64(nil, uint64(n))
	for ; n > 0; n-- {
		fr := newReader(r.bytes(int(r.u32())))
		for l := fr.u32(); l > 0; l-- {
			fr.u32()
			fr.valType()
		}
		fn := append([]byte{}, fr.b[:fr.pos()]...)
		ins := decodeBody(fr)
		depth := -1 // inside a check: the if depth; -1 outside
		for i := 0; i < len(ins); i++ {
			in := ins[i]
			if depth < 0 {
				if k := stackCode(ins[i:], g+1); k > 0 {
					fn = append(fn, fr.b[in.start:ins[i+k-1].end]...)
					i += k - 1
					continue
				}
			}
			structural := false
			switch in.op {
			case 0x23:
				if in.imm == g && depth < 0 {
					depth = 0
				}
			case 0x02, 0x03, 0x06, 0x1f, 0x05, 0x07, 0x0b, 0x18, 0x19:
				structural = true
			}
			if depth >= 0 {
				switch in.op {
				case 0x04:
					depth++
				case 0x0b:
					if depth--; depth == 0 {
						depth = -1
					}
				}
			} else if !structural {
				fn = append(fn, inc...)
			}
			fn = append(fn, fr.b[in.start:in.end]...)
		}
		out = wasmbin.AppendUint64(out, uint64(len(fn)))
		out = append(out, fn...)
	}
	return out
}
