//go:build wasmtime

package wasmtimeengine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/bytecodealliance/wasmtime-go/v37"
	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/interrupt"
	"github.com/wasmprov/wasmprov/runtime/internal/wasip1"
)

// binding is what serves one import of a module: a WASI function
// (package wasip1) or a wasmprov_v1 host function, or nothing.
type binding struct {
	module, name    string
	wasi            func(context.Context, *wasip1.State, wasip1.Memory, []uint64)
	host            func(context.Context, hostmodule.Memory, []uint64)
	params, results []engine.ValueType
	ty              *wasmtime.FuncType // nil when nothing serves the import
}

// instance is one store with one instance in it. Every wasmtime object it
// holds belongs to its store, used by one goroutine at a time.
type instance struct {
	store *wasmtime.Store
	inst  *wasmtime.Instance
	mem   *wasmtime.Memory // the guest's "memory" export, for host functions
	wasi  *wasip1.State
	// ctx is the context of the call in flight: host functions get it, as
	// wazero passes its call context to host functions.
	ctx context.Context
	// flag is word 0 of the interrupt memory; nil when not instrumented
	// and once closed. Atomic: Interrupt may run on another goroutine.
	flag atomic.Pointer[uint32]
	// exit is set by proc_exit: that call and every later one fail with it.
	exit *engine.ExitError
	// view and stack are reused by every host call (host functions never
	// call back into the guest, so calls do not nest).
	view  memory
	stack [16]uint64
}

func (m *module) Instantiate(ctx context.Context, c engine.InstanceConfig) (_ engine.Instance, err error) {
	state, err := wasip1.New(c)
	if err != nil {
		return nil, err
	}
	i := &instance{ctx: ctx, wasi: state, store: wasmtime.NewStore(m.engine.eng)}
	defer func() {
		if err != nil {
			i.close()
		}
	}()
	if m.cfg.MemoryLimitPages > 0 {
		i.store.Limiter(int64(m.cfg.MemoryLimitPages)*65536, -1, -1, -1, -1)
	}
	// The imports in order, each a function of this store: no linker, and
	// only the functions the module imports.
	imports := make([]wasmtime.AsExtern, len(m.binds))
	for k, b := range m.binds {
		if b.ty == nil {
			return nil, fmt.Errorf("unknown import %s.%s", b.module, b.name)
		}
		imports[k] = wasmtime.NewFunc(i.store, b.ty, i.hostFunc(b))
	}
	// The end of ctx interrupts a start section at its next host call (the
	// flag memory is not known before the instance exists).
	stop := context.AfterFunc(ctx, state.Interrupt)
	i.inst, err = wasmtime.NewInstance(i.store, m.mod, imports)
	if !stop() {
		return nil, fmt.Errorf("instantiating module: %w", ctx.Err())
	}
	if err != nil {
		return nil, i.convert(err)
	}
	if ex := i.inst.GetExport(i.store, abi.ExportMemory); ex != nil {
		i.mem = ex.Memory()
	}
	if m.cfg.Interruptible {
		if ex := i.inst.GetExport(i.store, interrupt.MemoryName); ex != nil && ex.Memory() != nil {
			// A one-page memory that cannot grow: its base never moves.
			i.flag.Store((*uint32)(ex.Memory().Data(i.store)))
		}
	}
	return i, nil
}

func funcType(params, results []engine.ValueType) *wasmtime.FuncType {
	p := make([]*wasmtime.ValType, len(params))
	for k, t := range params {
		p[k] = wasmtime.NewValType(valKind(t))
	}
	r := make([]*wasmtime.ValType, len(results))
	for k, t := range results {
		r[k] = wasmtime.NewValType(valKind(t))
	}
	return wasmtime.NewFuncType(p, r)
}

// Trap messages of the calls a host function ends.
const (
	msgInterrupted = "guest call interrupted by the host"
	msgExit        = "guest exited"
)

// hostFunc binds a WASI or wasmprov_v1 function: wasm values in and out
// through the same stack convention wazero uses. On an interrupted
// instance it traps instead of running. A panic becomes a trap of this
// instance rather than a panic of the caller's goroutine: proc_exit's
// (*engine.ExitError, kept for Call to return), an interrupt's, or a bug's.
func (i *instance) hostFunc(b *binding) func(*wasmtime.Caller, []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
	n := max(len(b.params), len(b.results))
	return func(caller *wasmtime.Caller, args []wasmtime.Val) (results []wasmtime.Val, trap *wasmtime.Trap) {
		if i.wasi.Interrupted() {
			return nil, wasmtime.NewTrap(msgInterrupted)
		}
		defer func() {
			if r := recover(); r != nil {
				results, trap = nil, i.trapOf(b.name, r)
			}
		}()
		stack := i.stack[:n]
		for k, a := range args {
			stack[k] = fromVal(a)
		}
		i.view = memory{caller: caller, mem: i.mem}
		if b.wasi != nil {
			b.wasi(i.ctx, i.wasi, &i.view, stack)
		} else {
			b.host(i.ctx, &i.view, stack)
		}
		if len(b.results) == 0 {
			return nil, nil
		}
		results = make([]wasmtime.Val, len(b.results))
		for k, t := range b.results {
			results[k] = toVal(t, stack[k])
		}
		return results, nil
	}
}

func (i *instance) trapOf(name string, r any) *wasmtime.Trap {
	switch r := r.(type) {
	case *engine.ExitError:
		i.exit = r
		return wasmtime.NewTrap(msgExit)
	case error:
		if errors.Is(r, wasip1.ErrInterrupted) {
			return wasmtime.NewTrap(msgInterrupted)
		}
	}
	return wasmtime.NewTrap(fmt.Sprintf("host function %s panicked: %v", name, r))
}

func fromVal(v wasmtime.Val) uint64 {
	switch v.Kind() {
	case wasmtime.KindI32:
		return uint64(uint32(v.I32()))
	case wasmtime.KindI64:
		return uint64(v.I64())
	}
	return 0
}

func toVal(t engine.ValueType, x uint64) wasmtime.Val {
	if t == hostmodule.I64 {
		return wasmtime.ValI64(int64(x))
	}
	return wasmtime.ValI32(int32(uint32(x)))
}

// memory is the guest memory seen from inside one host function call. The
// data slice is fetched on first use (two cgo calls) and kept for the
// call: only the guest grows its memory, and it does not run until the
// host function returns.
type memory struct {
	caller *wasmtime.Caller
	mem    *wasmtime.Memory
	data   []byte
	loaded bool
}

func (m *memory) bytes() []byte {
	if !m.loaded {
		m.loaded = true
		mem := m.mem
		if mem == nil && m.caller != nil { // during instantiation: not looked up yet
			if ex := m.caller.GetExport(abi.ExportMemory); ex != nil {
				mem = ex.Memory()
			}
		}
		if mem != nil {
			m.data = mem.UnsafeData(m.caller)
		}
	}
	return m.data
}

func (m *memory) Read(offset, n uint32) ([]byte, bool) {
	d := m.bytes()
	end := uint64(offset) + uint64(n)
	if end > uint64(len(d)) {
		return nil, false
	}
	return d[offset:end:end], true
}

func (m *memory) Write(offset uint32, v []byte) bool {
	d := m.bytes()
	if uint64(offset)+uint64(len(v)) > uint64(len(d)) {
		return false
	}
	copy(d[offset:], v)
	return true
}

func (i *instance) Function(name string) engine.Function {
	f := i.inst.GetFunc(i.store, name)
	if f == nil {
		return nil
	}
	ty := f.Type(i.store)
	fn := &function{i: i, f: f}
	for _, p := range ty.Params() {
		fn.params = append(fn.params, p.Kind())
	}
	for _, r := range ty.Results() {
		fn.results = append(fn.results, valueType(r.Kind()))
	}
	return fn
}

func (i *instance) Interruptible() bool { return i.flag.Load() != nil }

// Interrupt stores to the interrupt word, which the instrumented code loads
// at every check (no path runs more than a few microseconds without one),
// and marks the WASI state, which
// every host function checks first and a sleeping poll_oneoff wakes up on.
func (i *instance) Interrupt() {
	i.wasi.Interrupt()
	if f := i.flag.Load(); f != nil {
		atomic.StoreUint32(f, 1)
	}
}

func (i *instance) Close(context.Context) error {
	i.close()
	return nil
}

func (i *instance) close() {
	i.flag.Store(nil)
	if i.store != nil {
		i.store.Close()
		i.store = nil
	}
}

type function struct {
	i       *instance
	f       *wasmtime.Func
	params  []wasmtime.ValKind
	results []engine.ValueType
}

func (f *function) Call(ctx context.Context, stack []uint64) error {
	if f.i.exit != nil {
		return f.i.exit
	}
	args := make([]any, len(f.params))
	for k, kind := range f.params {
		if kind == wasmtime.KindI64 {
			args[k] = int64(stack[k])
		} else {
			args[k] = int32(uint32(stack[k]))
		}
	}
	prev := f.i.ctx
	f.i.ctx = ctx
	defer func() { f.i.ctx = prev }()
	res, err := f.f.Call(f.i.store, args...)
	if err != nil {
		return f.i.convert(err)
	}
	switch r := res.(type) {
	case nil:
	case int32:
		stack[0] = uint64(uint32(r))
	case int64:
		stack[0] = uint64(r)
	case []wasmtime.Val:
		for k, v := range r {
			stack[k] = fromVal(v)
		}
	default:
		return fmt.Errorf("unsupported result type %T", res)
	}
	return nil
}

// convert turns an exit into *engine.ExitError and a trap into a one-line
// error worded as wazero words it: wasmtime's own message carries a
// backtrace of every frame, which a stack overflow makes thousands of lines
// long, and logs are no place for it.
func (i *instance) convert(err error) error {
	if i.exit != nil {
		return i.exit
	}
	var werr *wasmtime.Error
	if errors.As(err, &werr) {
		if code, ok := werr.ExitStatus(); ok {
			return &engine.ExitError{Code: uint32(code)}
		}
	}
	var trap *wasmtime.Trap
	if errors.As(err, &trap) {
		msg := trap.Message()
		if _, cause, ok := strings.Cut(msg, "Caused by:\n"); ok {
			msg = strings.TrimSpace(cause) // a host function's trap
		}
		msg, _, _ = strings.Cut(msg, "\n")
		if code := trap.Code(); code != nil {
			if m, ok := trapMessages[*code]; ok {
				msg = "wasm error: " + m
			}
		}
		if i.wasi.Interrupted() {
			// The flag check's unreachable, or a host function refusing
			// to run: the interrupt, either way.
			msg = msgInterrupted
		}
		return errors.New(msg + stackTrace(trap))
	}
	return err
}

// maxFrames bounds the stack trace kept in a trap's error.
const maxFrames = 32

// stackTrace renders the innermost frames of a trap by function name, as
// wazero does: enough to tell where a guest died (a Go guest's fatal errors
// name the runtime function), short enough for a log line.
func stackTrace(trap *wasmtime.Trap) string {
	frames := trap.Frames()
	if len(frames) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nwasm stack trace:")
	for k, f := range frames {
		if k == maxFrames {
			fmt.Fprintf(&b, "\n\t... %d frames more", len(frames)-maxFrames)
			break
		}
		if name := f.FuncName(); name != nil {
			b.WriteString("\n\t" + *name + "()")
		} else {
			fmt.Fprintf(&b, "\n\t<wasm function %d>()", f.FuncIndex())
		}
	}
	return b.String()
}

var trapMessages = map[wasmtime.TrapCode]string{
	wasmtime.StackOverflow:          "stack overflow",
	wasmtime.MemoryOutOfBounds:      "out of bounds memory access",
	wasmtime.HeapMisaligned:         "unaligned atomic",
	wasmtime.TableOutOfBounds:       "invalid table access",
	wasmtime.IndirectCallToNull:     "invalid table access",
	wasmtime.BadSignature:           "indirect call type mismatch",
	wasmtime.IntegerOverflow:        "integer overflow",
	wasmtime.IntegerDivisionByZero:  "integer divide by zero",
	wasmtime.BadConversionToInteger: "invalid conversion to integer",
	wasmtime.UnreachableCodeReached: "unreachable",
	wasmtime.Interrupt:              "interrupted",
	wasmtime.OutOfFuel:              "out of fuel",
}
