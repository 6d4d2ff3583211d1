package precheck

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

func (c *checker) code(s *wasmbin.Section, r *wasmbin.Reader) error {
	c.codeSeen = true
	n, err := r.VecCount(2)
	if err != nil {
		return err
	}
	if n != c.nFuncs {
		return malformed(s.Offset, "the code section has %d bodies for %d functions", n, c.nFuncs)
	}
	var in wasmbin.Instruction
	c.flow.acquire()
	defer c.flow.release()
	for i := uint32(0); i < n; i++ {
		typ, _ := c.funcs.U32() // checked by functions
		fc, err := r.ReadCode()
		if err != nil {
			return err
		}
		if err := c.body(c.importFns+i, typ, &fc, &in); err != nil {
			return err
		}
	}
	return nil
}

func where(fn uint32, fc *wasmbin.Code) string {
	return fmt.Sprintf("function %d (body at offset 0x%x)", fn, fc.Offset)
}

// Control-flow units, the measure of a function's control flow that
// MaxFlowUnits and MaxFlowWork bound (see Limits): each instruction that
// starts or ends a basic block or adds an edge counts one, every 8 br_table
// targets one, and a loop three (the loop, and the if and end of the check
// the interrupt instrumentation puts in every loop header).
const loopUnits = 3

// exitUnits: a bulk memory or table instruction, or memory.grow, is a
// loop or a call into the engine in wazero's compiled code, with blocks
// of its own (measured: a function of 11,000 memory.fill took 45 s to
// compile, one of 22,000 more than 4 minutes).
const exitUnits = 8

// brTableTargetsPerUnit: br_table targets are edges, not blocks, and cost
// wazero far less (measured: 8 targets cost it less than one block).
const brTableTargetsPerUnit = 8

// The locals work (flow.go) counts the checks the interrupt
// instrumentation may add, each a join of two predecessors: one in every
// loop header and after every bulk instruction, at most one for every
// checkInstructions instructions (a check falls due after 2,048 units of
// work, and no instruction that is not control flow weighs more than 16),
// one before each call (a call needs one when the work since the last
// passed 384 units: at least callInstructions instructions), and
// checksPerFunction (the entry's and the exit's). compilerLocals: the
// values wazero's compiler keeps as locals of its own.
const (
	checkInstructions = 128
	callInstructions  = 16
	checksPerFunction = 2
	compilerLocals    = 2
)

// bodyCounts are what body counts in one function: fn, of body fc.
type bodyCounts struct {
	fn     uint32
	fc     *wasmbin.Code
	locals uint64 // parameters included
	// arity: the values a block takes or leaves; the function's results.
	arity                         uint32
	maxDepth, loops, insts, units int
	calls, accesses               int
	bulk0                         uint64 // c.bulk before the function
}

func (b *bodyCounts) where() string { return where(b.fn, b.fc) }

// body checks one function body: its size and locals before it reads an
// instruction, then its instructions, one pass, counting.
func (c *checker) body(fn, typ uint32, fc *wasmbin.Code, in *wasmbin.Instruction) error {
	b := bodyCounts{fn: fn, fc: fc}
	if err := c.bodySize(&b, typ); err != nil {
		return err
	}
	b.maxDepth, b.arity, b.bulk0 = 1, c.typeResults[typ], c.bulk
	if err := c.instructions(&b, in); err != nil {
		return err
	}
	if err := c.checkFlow(&b); err != nil {
		return err
	}
	if err := c.checkAccesses(&b); err != nil {
		return err
	}
	return c.checkLocalsWork(&b)
}

// bodySize checks the body's bytes and locals (of type typ, its
// parameters included), which body counts before any instruction.
func (c *checker) bodySize(b *bodyCounts, typ uint32) error {
	l, fc := &c.l, b.fc
	if len(fc.Body) > l.MaxFunctionBytes {
		return exceed("MaxFunctionBytes", uint64(len(fc.Body)), l.MaxFunctionBytes, fc.Offset, b.where(),
			fmt.Sprintf("has %d bytes", len(fc.Body)))
	}
	locals := fc.Locals + uint64(c.typeParams[typ])
	if locals > uint64(l.MaxLocals) {
		return exceed("MaxLocals", locals, l.MaxLocals, fc.Offset, b.where(),
			fmt.Sprintf("declares %d locals (parameters included)", locals))
	}
	st := &c.st
	st.MaxFunctionBytes = max(st.MaxFunctionBytes, len(fc.Body))
	st.MaxLocals = max(st.MaxLocals, int(locals))
	b.locals = locals
	return nil
}

// instructions walks the body's instructions (into in), counting them.
func (c *checker) instructions(b *bodyCounts, in *wasmbin.Instruction) error {
	l := &c.l
	w := b.fc.Walker()
	w.MaxBrTableTargets = uint32(min(l.MaxBrTableTargets, 1<<32-1))
	c.flow.reset()
	for {
		ok, err := w.Next(in)
		if bt, isBT := err.(*wasmbin.BrTableTooLarge); isBT {
			return exceed("MaxBrTableTargets", bt.Targets, l.MaxBrTableTargets, bt.Offset, b.where(),
				fmt.Sprintf("has a br_table of %d targets (at offset 0x%x)", bt.Targets, bt.Offset))
		}
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if err := c.instr(b, &w, in); err != nil {
			return err
		}
	}
}

// instr counts instruction in (the walker w just read it) and checks the
// limits it may take the function or the module past.
func (c *checker) instr(b *bodyCounts, w *wasmbin.Walker, in *wasmbin.Instruction) error {
	l := &c.l
	b.insts++
	if op := in.Opcode; op >= wasmbin.OpcodeI32Load && op <= wasmbin.OpcodeI64Store32 ||
		op == wasmbin.OpcodeTableGet || op == wasmbin.OpcodeTableSet {
		b.accesses++
	}
	if op := in.Opcode; op <= wasmbin.OpcodeLocalGet || op == wasmbin.OpcodeBrOnNull || op == wasmbin.OpcodeBrOnNonNull {
		c.flow.step(in) // control and local.get: the rest changes no block
	}
	switch in.Opcode {
	case wasmbin.OpcodeBlock, wasmbin.OpcodeLoop, wasmbin.OpcodeIf, wasmbin.OpcodeTry, wasmbin.OpcodeTryTable:
		if err := c.open(b, w, in); err != nil {
			return err
		}
	case wasmbin.OpcodeElse, wasmbin.OpcodeEnd, wasmbin.OpcodeBr, wasmbin.OpcodeBrIf,
		wasmbin.OpcodeReturn, wasmbin.OpcodeUnreachable, wasmbin.OpcodeCatch, wasmbin.OpcodeCatchAll,
		wasmbin.OpcodeDelegate, wasmbin.OpcodeBrOnNull, wasmbin.OpcodeBrOnNonNull,
		wasmbin.OpcodeThrow, wasmbin.OpcodeThrowRef, wasmbin.OpcodeRethrow:
		b.units++
	case wasmbin.OpcodeBrTable:
		t := int(in.Count) + 1
		b.units += 1 + t/brTableTargetsPerUnit // t is within MaxBrTableTargets: the walker checks
		c.st.MaxBrTableTargets = max(c.st.MaxBrTableTargets, t)
	case wasmbin.OpcodeCall, wasmbin.OpcodeReturnCall:
		b.calls++
		return nil
	case wasmbin.OpcodeCallIndirect, wasmbin.OpcodeReturnCallIndirect, wasmbin.OpcodeCallRef, wasmbin.OpcodeReturnCallRef,
		0x6d, 0x6e, 0x6f, 0x70, 0x7f, 0x80, 0x81, 0x82, // i32 and i64 div_s, div_u, rem_s, rem_u
		0xa8, 0xa9, 0xaa, 0xab, 0xae, 0xaf, 0xb0, 0xb1: // trapping float-to-int truncations
		b.units++ // trap checks: wazero gives each branches of its own
		if in.Opcode == wasmbin.OpcodeCallIndirect || in.Opcode == wasmbin.OpcodeReturnCallIndirect ||
			in.Opcode == wasmbin.OpcodeCallRef || in.Opcode == wasmbin.OpcodeReturnCallRef {
			b.calls++
		}
	case wasmbin.OpcodePrefixVec:
		if sub := in.Sub; sub <= wasmbin.VecV128Store || sub == wasmbin.VecV128Load32Zero || sub == wasmbin.VecV128Load64Zero ||
			sub >= wasmbin.VecV128Load8Lane && sub <= wasmbin.VecV128Store64Lane {
			b.accesses++
		}
		return nil
	case wasmbin.OpcodePrefixAtomic:
		if in.Sub != wasmbin.AtomicFence {
			b.accesses++
		}
		return nil
	case wasmbin.OpcodeRefFunc:
		return refuse("NoRefFuncInCode", in.Offset, b.where(),
			fmt.Sprintf("has ref.func at offset 0x%x: on wazero every execution keeps a new function reference for the instance's life, outside the memory limit; reach functions through a table (call_indirect) instead", in.Offset))
	case wasmbin.OpcodeMemoryGrow:
		b.units += exitUnits
		c.bulk++
	case wasmbin.OpcodePrefixMisc:
		switch in.Sub {
		case wasmbin.MiscMemoryInit, wasmbin.MiscMemoryCopy, wasmbin.MiscMemoryFill,
			wasmbin.MiscTableInit, wasmbin.MiscTableCopy, wasmbin.MiscTableGrow, wasmbin.MiscTableFill:
			b.units += exitUnits
			c.bulk++
		default:
			return nil
		}
		if c.bulk > uint64(l.MaxBulkInstructions) {
			return exceed("MaxBulkInstructions", c.bulk, l.MaxBulkInstructions, in.Offset, b.where(),
				fmt.Sprintf("brings the bulk memory and table instructions and memory.grow to %d (at offset 0x%x)", c.bulk, in.Offset))
		}
	default:
		return nil
	}
	if b.units > l.MaxFlowUnits {
		return exceed("MaxFlowUnits", uint64(b.units), l.MaxFlowUnits, in.Offset, b.where(),
			fmt.Sprintf("has more than %d control-flow units (at offset 0x%x)", l.MaxFlowUnits, in.Offset))
	}
	return nil
}

// open counts a structure that in opens (block, loop, if, try,
// try_table; the walker w is inside it): its units, block type, depth
// and loops.
func (c *checker) open(b *bodyCounts, w *wasmbin.Walker, in *wasmbin.Instruction) error {
	l := &c.l
	b.units++
	switch bt := in.BlockType; bt.Kind {
	case wasmbin.BlockValue:
		b.arity = max(b.arity, 1)
	case wasmbin.BlockTypeIndex:
		if bt.Index < uint32(len(c.typeParams)) { // else invalid: the engines refuse it
			b.arity = max(b.arity, c.typeParams[bt.Index], c.typeResults[bt.Index])
		}
	}
	if d := w.Depth(); d > b.maxDepth {
		b.maxDepth = d
		if d > l.MaxNesting {
			return exceed("MaxNesting", uint64(d), l.MaxNesting, in.Offset, b.where(),
				fmt.Sprintf("nests control structures %d deep (at offset 0x%x)", d, in.Offset))
		}
	}
	switch in.Opcode {
	case wasmbin.OpcodeLoop:
		b.units += loopUnits - 1
		b.loops++
		if b.loops > l.MaxLoops {
			return exceed("MaxLoops", uint64(b.loops), l.MaxLoops, in.Offset, b.where(),
				fmt.Sprintf("has more than %d loops (loop at offset 0x%x)", l.MaxLoops, in.Offset))
		}
	case wasmbin.OpcodeTryTable:
		b.units += int(in.Count)
	}
	return nil
}

// checkFlow checks the function's instructions and control-flow units,
// and the module's flow work and units so far.
func (c *checker) checkFlow(b *bodyCounts) error {
	l, st, fc := &c.l, &c.st, b.fc
	if b.insts > l.MaxInstructions {
		return exceed("MaxInstructions", uint64(b.insts), l.MaxInstructions, fc.Offset, b.where(),
			fmt.Sprintf("has %d instructions", b.insts))
	}
	work := uint64(b.units) * uint64(b.units)
	c.flowWork += work
	if c.flowWork > uint64(l.MaxFlowWork) {
		return exceed("MaxFlowWork", c.flowWork, l.MaxFlowWork, fc.Offset, b.where(),
			fmt.Sprintf("brings the sum of squared control-flow units over the functions to %d", c.flowWork))
	}
	st.MaxNesting = max(st.MaxNesting, b.maxDepth)
	st.MaxLoops = max(st.MaxLoops, b.loops)
	st.MaxInstructions = max(st.MaxInstructions, b.insts)
	st.MaxFlowUnits = max(st.MaxFlowUnits, b.units)
	st.FlowWork = int(c.flowWork)
	st.BulkInstructions = int(c.bulk)
	c.flowTotal += uint64(b.units)
	if c.flowTotal > uint64(l.MaxModuleFlowUnits) {
		return exceed("MaxModuleFlowUnits", c.flowTotal, l.MaxModuleFlowUnits, fc.Offset, b.where(),
			fmt.Sprintf("brings the control-flow units over the module to %d", c.flowTotal))
	}
	st.FlowUnits = int(c.flowTotal)
	return nil
}

// checkAccesses checks the function's memory and table accesses, and the
// module's so far.
func (c *checker) checkAccesses(b *bodyCounts) error {
	l, st, fc := &c.l, &c.st, b.fc
	if b.accesses > l.MaxMemoryAccesses {
		return exceed("MaxMemoryAccesses", uint64(b.accesses), l.MaxMemoryAccesses, fc.Offset, b.where(),
			fmt.Sprintf("has %d memory and table accesses", b.accesses))
	}
	c.accesses += uint64(b.accesses)
	if c.accesses > uint64(l.MaxModuleMemoryAccesses) {
		return exceed("MaxModuleMemoryAccesses", c.accesses, l.MaxModuleMemoryAccesses, fc.Offset, b.where(),
			fmt.Sprintf("brings the memory and table accesses over the module to %d", c.accesses))
	}
	st.MaxMemoryAccesses = max(st.MaxMemoryAccesses, b.accesses)
	st.MemoryAccesses = int(c.accesses)
	return nil
}

// checkLocalsWork checks the function's locals work (flow.go), and the
// module's so far; the instrumentation's checks add joins of two
// predecessors each.
func (c *checker) checkLocalsWork(b *bodyCounts) error {
	l, st, fc, flow := &c.l, &c.st, b.fc, &c.flow
	insts := b.insts
	values := b.locals + uint64(b.arity) + compilerLocals
	checks := uint64(insts/checkInstructions+min(b.calls, insts/callInstructions)+b.loops+checksPerFunction) + (c.bulk - b.bulk0)
	preds := flow.preds + 2*checks
	lw := satAdd(mulSat(mulSat(values, values), preds), mulSat(values, flow.walks), flow.reads)
	if lw > uint64(l.MaxLocalsWork) {
		return exceed("MaxLocalsWork", lw, l.MaxLocalsWork, fc.Offset, b.where(),
			fmt.Sprintf("has %d values (locals and block arity), %d join predecessors, %d walks and %d read walks: locals work %d", values, preds, flow.walks, flow.reads, lw))
	}
	c.localWork = satAdd(c.localWork, lw)
	if c.localWork > uint64(l.MaxModuleLocalsWork) {
		return exceed("MaxModuleLocalsWork", c.localWork, l.MaxModuleLocalsWork, fc.Offset, b.where(),
			fmt.Sprintf("brings the locals work over the module to %d", c.localWork))
	}
	st.MaxLocalsWork = max(st.MaxLocalsWork, int(min(lw, math.MaxInt)))
	st.LocalsWork = int(min(c.localWork, math.MaxInt))
	return nil
}

// satAdd is the sum, or math.MaxUint64 when that overflows.
func satAdd(vs ...uint64) uint64 {
	var sum uint64
	for _, v := range vs {
		var carry uint64
		if sum, carry = bits.Add64(sum, v, 0); carry != 0 {
			return math.MaxUint64
		}
	}
	return sum
}

// mulSat is a*b, or math.MaxUint64 when that overflows (Measure has no
// limits: 4 G locals).
func mulSat(a, b uint64) uint64 {
	if hi, lo := bits.Mul64(a, b); hi == 0 {
		return lo
	}
	return math.MaxUint64
}
