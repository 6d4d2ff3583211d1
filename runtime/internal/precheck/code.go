package precheck

import (
	"fmt"

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

// body checks one function body: its size and locals before it reads an
// instruction, then its instructions, one pass, counting.
func (c *checker) body(fn, typ uint32, fc *wasmbin.Code, in *wasmbin.Instruction) error {
	l := &c.l
	if len(fc.Body) > l.MaxFunctionBytes {
		return exceed("MaxFunctionBytes", uint64(len(fc.Body)), l.MaxFunctionBytes, fc.Offset, where(fn, fc),
			fmt.Sprintf("has %d bytes", len(fc.Body)))
	}
	locals := fc.Locals + uint64(c.typeParams[typ])
	if locals > uint64(l.MaxLocals) {
		return exceed("MaxLocals", locals, l.MaxLocals, fc.Offset, where(fn, fc),
			fmt.Sprintf("declares %d locals (parameters included)", locals))
	}
	st := &c.st
	st.MaxFunctionBytes = max(st.MaxFunctionBytes, len(fc.Body))
	st.MaxLocals = max(st.MaxLocals, int(locals))

	w := fc.Walker()
	w.MaxBrTableTargets = uint32(min(l.MaxBrTableTargets, 1<<32-1))
	maxDepth, loops, insts, units := 1, 0, 0, 0
	for {
		ok, err := w.Next(in)
		if bt, isBT := err.(*wasmbin.BrTableTooLarge); isBT {
			return exceed("MaxBrTableTargets", bt.Targets, l.MaxBrTableTargets, bt.Offset, where(fn, fc),
				fmt.Sprintf("has a br_table of %d targets (at offset 0x%x)", bt.Targets, bt.Offset))
		}
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		insts++
		switch in.Opcode {
		case wasmbin.OpcodeBlock, wasmbin.OpcodeLoop, wasmbin.OpcodeIf, wasmbin.OpcodeTry, wasmbin.OpcodeTryTable:
			units++
			if d := w.Depth(); d > maxDepth {
				maxDepth = d
				if d > l.MaxNesting {
					return exceed("MaxNesting", uint64(d), l.MaxNesting, in.Offset, where(fn, fc),
						fmt.Sprintf("nests control structures %d deep (at offset 0x%x)", d, in.Offset))
				}
			}
			switch in.Opcode {
			case wasmbin.OpcodeLoop:
				units += loopUnits - 1
				loops++
				if loops > l.MaxLoops {
					return exceed("MaxLoops", uint64(loops), l.MaxLoops, in.Offset, where(fn, fc),
						fmt.Sprintf("has more than %d loops (loop at offset 0x%x)", l.MaxLoops, in.Offset))
				}
			case wasmbin.OpcodeTryTable:
				units += int(in.Count)
			}
		case wasmbin.OpcodeElse, wasmbin.OpcodeEnd, wasmbin.OpcodeBr, wasmbin.OpcodeBrIf,
			wasmbin.OpcodeReturn, wasmbin.OpcodeUnreachable, wasmbin.OpcodeCatch, wasmbin.OpcodeCatchAll,
			wasmbin.OpcodeDelegate, wasmbin.OpcodeBrOnNull, wasmbin.OpcodeBrOnNonNull,
			wasmbin.OpcodeThrow, wasmbin.OpcodeThrowRef, wasmbin.OpcodeRethrow:
			units++
		case wasmbin.OpcodeBrTable:
			t := int(in.Count) + 1
			units += 1 + t/brTableTargetsPerUnit // t is within MaxBrTableTargets: the walker checks
			st.MaxBrTableTargets = max(st.MaxBrTableTargets, t)
		case wasmbin.OpcodeCallIndirect, wasmbin.OpcodeReturnCallIndirect, wasmbin.OpcodeCallRef, wasmbin.OpcodeReturnCallRef,
			0x6d, 0x6e, 0x6f, 0x70, 0x7f, 0x80, 0x81, 0x82, // i32 and i64 div_s, div_u, rem_s, rem_u
			0xa8, 0xa9, 0xaa, 0xab, 0xae, 0xaf, 0xb0, 0xb1: // trapping float-to-int truncations
			units++ // trap checks: wazero gives each branches of its own
		case wasmbin.OpcodeMemoryGrow:
			units += exitUnits
			c.bulk++
		case wasmbin.OpcodePrefixMisc:
			switch in.Sub {
			case wasmbin.MiscMemoryInit, wasmbin.MiscMemoryCopy, wasmbin.MiscMemoryFill,
				wasmbin.MiscTableInit, wasmbin.MiscTableCopy, wasmbin.MiscTableGrow, wasmbin.MiscTableFill:
				units += exitUnits
				c.bulk++
			default:
				continue
			}
			if c.bulk > uint64(l.MaxBulkInstructions) {
				return exceed("MaxBulkInstructions", c.bulk, l.MaxBulkInstructions, in.Offset, where(fn, fc),
					fmt.Sprintf("brings the bulk memory and table instructions and memory.grow to %d (at offset 0x%x)", c.bulk, in.Offset))
			}
		default:
			continue
		}
		if units > l.MaxFlowUnits {
			return exceed("MaxFlowUnits", uint64(units), l.MaxFlowUnits, in.Offset, where(fn, fc),
				fmt.Sprintf("has more than %d control-flow units (at offset 0x%x)", l.MaxFlowUnits, in.Offset))
		}
	}
	if insts > l.MaxInstructions {
		return exceed("MaxInstructions", uint64(insts), l.MaxInstructions, fc.Offset, where(fn, fc),
			fmt.Sprintf("has %d instructions", insts))
	}
	work := uint64(units) * uint64(units)
	c.flowWork += work
	if c.flowWork > uint64(l.MaxFlowWork) {
		return exceed("MaxFlowWork", c.flowWork, l.MaxFlowWork, fc.Offset, where(fn, fc),
			fmt.Sprintf("brings the sum of squared control-flow units over the functions to %d", c.flowWork))
	}
	st.MaxNesting = max(st.MaxNesting, maxDepth)
	st.MaxLoops = max(st.MaxLoops, loops)
	st.MaxInstructions = max(st.MaxInstructions, insts)
	st.MaxFlowUnits = max(st.MaxFlowUnits, units)
	st.FlowWork = int(c.flowWork)
	st.BulkInstructions = int(c.bulk)
	c.flowTotal += uint64(units)
	if c.flowTotal > uint64(l.MaxModuleFlowUnits) {
		return exceed("MaxModuleFlowUnits", c.flowTotal, l.MaxModuleFlowUnits, fc.Offset, where(fn, fc),
			fmt.Sprintf("brings the control-flow units over the module to %d", c.flowTotal))
	}
	st.FlowUnits = int(c.flowTotal)
	return nil
}
