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
	"github.com/wasmprov/wasmprov/hostfuncs"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/interrupt"
)

// instance is one store with one instance in it. Every wasmtime object it
// holds belongs to its store, used by one goroutine at a time.
type instance struct {
	store  *wasmtime.Store
	linker *wasmtime.Linker
	inst   *wasmtime.Instance
	mem    *wasmtime.Memory // the guest's "memory" export, for host functions
	wasi   *wasiShim
	// ctx is the context of the call in flight: host functions get it, as
	// wazero passes its call context to host functions.
	ctx  context.Context
	flag *uint32 // word 0 of the interrupt memory; nil when not instrumented
}

func (m *module) Instantiate(ctx context.Context, c engine.InstanceConfig) (_ engine.Instance, err error) {
	i := &instance{ctx: ctx, store: wasmtime.NewStore(m.engine.eng)}
	i.wasi = newWASIShim(i, c)
	defer func() {
		if err != nil {
			i.close()
		}
	}()
	if m.cfg.MemoryLimitPages > 0 {
		i.store.Limiter(int64(m.cfg.MemoryLimitPages)*65536, -1, -1, -1, -1)
	}
	wc := wasmtime.NewWasiConfig()
	keys, values := make([]string, 0, len(c.Env)), make([]string, 0, len(c.Env))
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		keys, values = append(keys, k), append(values, v)
	}
	wc.SetEnv(keys, values)
	i.store.SetWasi(wc)
	i.linker = wasmtime.NewLinker(m.engine.eng)
	if err := i.linker.DefineWasi(); err != nil {
		return nil, fmt.Errorf("defining WASI: %w", err)
	}
	i.linker.AllowShadowing(true)
	if err := i.wasi.define(i.linker); err != nil {
		return nil, fmt.Errorf("defining WASI: %w", err)
	}
	for _, f := range m.cfg.HostFunctions {
		if err := i.linker.FuncNew(abi.ModuleName, f.Name, funcType(f.Params, f.Results), i.hostFunc(f)); err != nil {
			return nil, fmt.Errorf("defining %s.%s: %w", abi.ModuleName, f.Name, err)
		}
	}
	if i.inst, err = i.linker.Instantiate(i.store, m.mod); err != nil {
		return nil, convert(err)
	}
	if ex := i.inst.GetExport(i.store, abi.ExportMemory); ex != nil {
		i.mem = ex.Memory()
	}
	if m.cfg.Interruptible {
		if ex := i.inst.GetExport(i.store, interrupt.MemoryName); ex != nil && ex.Memory() != nil {
			// A one-page memory that cannot grow: its base never moves.
			i.flag = (*uint32)(ex.Memory().Data(i.store))
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

// hostFunc binds a hostfuncs.Function: wasm values in and out through the
// same stack convention wazero uses. A panic in the host function becomes a
// trap of this instance rather than a panic of the caller's goroutine.
func (i *instance) hostFunc(f hostfuncs.Function) func(*wasmtime.Caller, []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
	n := max(len(f.Params), len(f.Results))
	return func(caller *wasmtime.Caller, args []wasmtime.Val) (results []wasmtime.Val, trap *wasmtime.Trap) {
		defer func() {
			if r := recover(); r != nil {
				results, trap = nil, wasmtime.NewTrap(fmt.Sprintf("host function %s panicked: %v", f.Name, r))
			}
		}()
		stack := make([]uint64, n)
		for k, a := range args {
			stack[k] = fromVal(a)
		}
		f.Fn(i.ctx, memory{caller: caller, mem: i.mem}, stack)
		results = make([]wasmtime.Val, len(f.Results))
		for k, t := range f.Results {
			results[k] = toVal(t, stack[k])
		}
		return results, nil
	}
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
	if t == hostfuncs.I64 {
		return wasmtime.ValI64(int64(x))
	}
	return wasmtime.ValI32(int32(uint32(x)))
}

// memory is the guest memory seen from inside a host function. The data
// slice is fetched per access: the memory may have grown since.
type memory struct {
	caller *wasmtime.Caller
	mem    *wasmtime.Memory
}

func (m memory) data() []byte {
	if m.mem == nil {
		return nil
	}
	return m.mem.UnsafeData(m.caller)
}

func (m memory) Read(offset, n uint32) ([]byte, bool) {
	d := m.data()
	end := uint64(offset) + uint64(n)
	if end > uint64(len(d)) {
		return nil, false
	}
	return d[offset:end:end], true
}

func (m memory) Write(offset uint32, v []byte) bool {
	d := m.data()
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

func (i *instance) Interruptible() bool { return i.flag != nil }

// Interrupt stores to the interrupt word, which the instrumented code loads
// at every function entry and loop header.
func (i *instance) Interrupt() {
	if i.flag != nil {
		atomic.StoreUint32(i.flag, 1)
	}
}

func (i *instance) Close(context.Context) error {
	i.close()
	return nil
}

func (i *instance) close() {
	i.flag = nil
	if i.linker != nil {
		i.linker.Close()
		i.linker = nil
	}
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
		return convert(err)
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

// convert turns a WASI exit into *engine.ExitError and a trap into a
// one-line error worded as wazero words it: wasmtime's own message carries
// a backtrace of every frame, which a stack overflow makes thousands of
// lines long, and logs are no place for it.
func convert(err error) error {
	var werr *wasmtime.Error
	if errors.As(err, &werr) {
		if code, ok := werr.ExitStatus(); ok {
			return &engine.ExitError{Code: uint32(code)}
		}
	}
	var trap *wasmtime.Trap
	if errors.As(err, &trap) {
		msg, _, _ := strings.Cut(trap.Message(), "\n")
		if code := trap.Code(); code != nil {
			if m, ok := trapMessages[*code]; ok {
				msg = "wasm error: " + m
			}
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
