package precheck

// Shapes of function bodies that cost wazero time quadratic in their
// locals (see Limits.MaxLocalsWork), for the worst-case measurements and
// the limit tests. Every function has type (func (param i32) (result
// i32)); its other locals are declared in four equal groups, i32, i64,
// f64 and v128, and each shape ends by storing every local to memory at
// the address in local 0, so that no value is dead.

// localKind is one of the value types of the locals shapes.
type localKind struct {
	typ        byte
	add, store []byte
}

var localKinds = []localKind{
	{0x7f, []byte{0x6a}, []byte{0x36, 0x02, 0x00}},                   // i32: i32.add, i32.store
	{0x7e, []byte{0x7c}, []byte{0x37, 0x03, 0x00}},                   // i64: i64.add, i64.store
	{0x7c, []byte{0xa0}, []byte{0x39, 0x03, 0x00}},                   // f64: f64.add, f64.store
	{0x7b, []byte{0xfd, 0xae, 0x01}, []byte{0xfd, 0x0b, 0x04, 0x00}}, // v128: i32x4.add, v128.store
}

// localGroups: the declarations of locals locals (the parameter
// included), and the first local and count of each kind's group.
func localGroups(locals int) (decl [][2]uint64, first, n []uint32) {
	per := (locals - 1) / len(localKinds)
	next := uint32(1)
	for i, k := range localKinds {
		c := per
		if i == 0 {
			c += (locals - 1) % len(localKinds)
		}
		if c > 0 {
			decl = append(decl, [2]uint64{uint64(c), uint64(k.typ)})
		}
		first = append(first, next)
		n = append(n, uint32(c))
		next += uint32(c)
	}
	return decl, first, n
}

// storeLocals stores every local but the parameter at the address in
// local 0.
func storeLocals(locals int) []byte {
	_, first, n := localGroups(locals)
	var e []byte
	for g, k := range localKinds {
		for i := uint32(0); i < n[g]; i++ {
			e = append(e, cat(opLocalGet(0), opLocalGet(first[g]+i), k.store)...)
		}
	}
	return e
}

// shapeLocalsArith is the red team's shape: local-to-local arithmetic
// (local.get a; local.get b; add; local.set c) over locals distinct
// locals of the four kinds in turn, each read about locals/8 operations
// after it was written, padded to size bytes.
func shapeLocalsArith(locals, size int) []byte {
	decl, first, n := localGroups(locals)
	tail := storeLocals(locals)
	var e []byte
	for i := uint32(0); ; i++ {
		g := int(i) % len(localKinds)
		if n[g] < 3 {
			if i > uint32(4*len(localKinds)) {
				break
			}
			continue
		}
		j := i / uint32(len(localKinds))
		a := first[g] + j%n[g]
		b := first[g] + (j+n[g]/2)%n[g]
		c := first[g] + (j+n[g]-1)%n[g]
		op := cat(opLocalGet(a), opLocalGet(b), localKinds[g].add, opLocalSet(c))
		if len(e)+len(op)+len(tail)+32 > size {
			break
		}
		e = append(e, op...)
	}
	return body(decl, finish(fill(append(e, tail...), size-24)))
}

// shapeLocalsJoins: joins empty ifs (local.get 0; if; end), then every
// local read: wazero gives every if's join a parameter for every local
// read after it (the read walks back over every join to the local's
// definition), then removes them, in time locals² × joins.
func shapeLocalsJoins(locals, joins int) []byte {
	decl, _, _ := localGroups(locals)
	e := repeat(cat(opLocalGet(0), []byte{0x04, 0x40}, opEnd), joins)
	return body(decl, finish(append(e, storeLocals(locals)...)))
}

// shapeLocalsLoop: a loop that reads every local, then branches back to
// its header from backs places (local.get 0; br_if 0): the header gets a
// parameter for every local, each with an argument from every branch.
func shapeLocalsLoop(locals, backs int) []byte {
	decl, _, _ := localGroups(locals)
	e := cat(opLoop, storeLocals(locals), repeat(cat(opLocalGet(0), opBrIf(0)), backs), opEnd)
	return body(decl, finish(e))
}

// shapeLocalsBrTable: groups of an empty if and a block left by a
// br_table of targets targets (all to the block), then every local read:
// each block's join has targets predecessors and a parameter for every
// local.
func shapeLocalsBrTable(locals, targets, groups int) []byte {
	decl, _, _ := localGroups(locals)
	bt := cat(opLocalGet(0), []byte{0x04, 0x40}, opEnd, opBlock, opLocalGet(0), []byte{0x0e}, leb(uint64(targets-1)), make([]byte, targets), opEnd)
	return body(decl, finish(append(repeat(bt, groups), storeLocals(locals)...)))
}

// shapeLocalsCalls: locals locals, and groups of 24 chained loads and a
// call (local.get 0; i32.load ×24; call 0; drop): the instrumentation puts
// a check before each call (the loads' work passed the 384 units a call
// may follow a check by), the most checks per instruction; then every
// local read.
func shapeLocalsCalls(locals, groups int) []byte {
	decl, _, _ := localGroups(locals)
	g := cat(opLocalGet(0), repeat([]byte{0x28, 0x02, 0x00}, 24), []byte{0x10, 0x00, 0x1a})
	return body(decl, finish(append(repeat(g, groups), storeLocals(locals)...)))
}

// arityType is the type index of (func (param i64×arity) (result
// i64×arity)) in the modules of shapeArity: 1.
const arityType = 1

// arityTypes are the types of a module of shapeArity functions: i32i32
// and [i64×arity] -> [i64×arity].
func arityTypes(arity int) [][]byte {
	many := repeat([]byte{0x7e}, arity)
	return [][]byte{i32i32, funcType(many, many)}
}

// shapeArity: arity i64 constants pushed, blocks empty blocks of type
// arityType in sequence (each join has arity parameters), then the values
// dropped.
func shapeArity(arity, blocks int) []byte {
	var e []byte
	for i := 0; i < arity; i++ {
		e = append(e, cat([]byte{0x42}, sleb(int64(i)))...)
	}
	e = append(e, repeat([]byte{0x02, arityType, 0x0b}, blocks)...)
	e = append(e, repeat([]byte{0x1a}, arity)...)
	return body(nil, finish(e))
}

// shapeLocalsChain: a block of backs conditional branches out of it
// (local.get 0; br_if 0), each followed by reads of reads locals
// (local.get; drop): every br_if starts a block of one predecessor, and
// every read walks that chain back to the function's entry.
func shapeLocalsChain(locals, backs, reads int) []byte {
	decl, _, _ := localGroups(locals)
	var step []byte
	step = append(step, cat(opLocalGet(0), opBrIf(0))...)
	for k := 0; k < reads; k++ {
		step = append(step, cat(opLocalGet(uint32(k%locals)), []byte{0x1a})...)
	}
	return body(decl, finish(cat(opBlock, repeat(step, backs), opEnd)))
}
