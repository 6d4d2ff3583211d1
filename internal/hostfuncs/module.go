package hostfuncs

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/wasmprov/wasmprov/abi"
)

// dataFunc is a host function with the signature
// (func (param $req i32) (param $req_len i32) (param $buf i32) (param $limit i32) (result i64)):
// a JSON request in, a result or an errno out.
type dataFunc struct {
	cap abi.Capability
	fn  func(ctx context.Context, c *Call, req []byte) ([]byte, error)
}

var dataFuncs = map[string]dataFunc{
	abi.ImportHTTP:          {abi.CapHTTP, httpDo},
	abi.ImportHTTPBin:       {abi.CapHTTP, httpDoBin},
	abi.ImportMachineUpdate: {abi.CapMachineUpdate, machineUpdate},
	abi.ImportPVList:        {abi.CapPVList, pvList},
	abi.ImportConfigVar:     {abi.CapConfigVar, configVar},
}

// Invoke runs the data host function fn for the guest of c: the Go entry
// point shared by the wasm binding and the native runner.
func (c *Call) Invoke(fn string, req []byte) ([]byte, error) {
	d, ok := dataFuncs[fn]
	if !ok {
		return nil, errorf(abi.ErrnoInvalid, "unknown host function %q", fn)
	}
	if err := c.check(fn, d.cap); err != nil {
		return nil, err
	}
	if max := c.Env.limits().MaxRequestBytes; int64(len(req)) > max {
		return nil, errorf(abi.ErrnoTooLarge, "%s request of %d bytes exceeds the limit of %d", fn, len(req), max)
	}
	if err := c.admitUse(fn); err != nil {
		return nil, err
	}
	return d.fn(c.blocking(), c, req)
}

// admitUse counts a use of data host function fn against the call's cap.
// Past it the guest is refused, and warned about once per function.
func (c *Call) admitUse(fn string) error {
	key := fn
	if fn == abi.ImportHTTPBin {
		// One cap for both framings of HTTP: a guest must not double its
		// requests by alternating them.
		key = abi.ImportHTTP
	}
	max := c.Env.limits().perCall(key)
	if c.uses == nil {
		c.uses = make(map[string]int64, 1)
	}
	n := c.uses[key]
	if n >= max {
		if n == max {
			c.uses[key] = n + 1 // warn once
			c.logger().Warn("guest exceeded a host function's limit for one call; further uses are refused",
				"function", fn, "limit", max)
		}
		if key != fn {
			return errorf(abi.ErrnoTooLarge, "this call has used %s and %s %d times: the limit is %d a call", abi.ImportHTTP, fn, max, max)
		}
		return errorf(abi.ErrnoTooLarge, "this call has used %s %d times: the limit is %d a call", fn, max, max)
	}
	c.uses[key] = n + 1
	return nil
}

// check refuses a host function whose capability the guest did not declare
// or the policy did not grant. The refusal is logged: it is either a bug in
// the provider or an attempt to reach something it should not.
func (c *Call) check(fn string, capability abi.Capability) error {
	if c.Granted.Has(capability) {
		return nil
	}
	c.logger().Warn("guest called a host function it was not granted",
		"function", fn, "capability", capability.Names(), "granted", c.Granted.Names())
	return errorf(abi.ErrnoNotDeclared, "%s needs capability %v, which the module did not declare or the policy did not grant", fn, capability.Names())
}

// hostFunc is the wasm binding of a data function: decode the request from
// guest memory, run it, deliver the result.
func (d dataFunc) hostFunc(name string) func(ctx context.Context, mem Memory, stack []uint64) {
	return func(ctx context.Context, mem Memory, stack []uint64) {
		c := CallFrom(ctx)
		if c == nil {
			stack[0] = errnoResult(abi.ErrnoUnavailable)
			return
		}
		reqPtr, reqLen, buf, limit := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
		var out []byte
		err := checkRange(mem, name+" request", reqPtr, reqLen)
		if err == nil {
			err = checkRange(mem, "result buffer", buf, limit)
		}
		if err == nil {
			err = c.check(name, d.cap)
		}
		if err == nil && int64(reqLen) > c.Env.limits().MaxRequestBytes {
			err = errorf(abi.ErrnoTooLarge, "%s request of %d bytes exceeds the limit of %d", name, reqLen, c.Env.limits().MaxRequestBytes)
		}
		if err == nil {
			err = c.charge(int64(reqLen))
		}
		if err == nil {
			req, _ := read(mem, reqPtr, reqLen)
			out, err = c.Invoke(name, req)
		}
		stack[0] = c.deliver(mem, out, err, buf, limit)
	}
}

// Memory is the guest's linear memory as host functions see it. It is the
// subset of wazero's api.Memory they use, so a wazero memory is one as is;
// other engines adapt theirs.
type Memory interface {
	// Read returns a view of byteCount bytes at offset, or false when the
	// range is out of bounds. The view is only valid until the guest runs.
	Read(offset, byteCount uint32) ([]byte, bool)
	// Write copies v to offset, or returns false when out of bounds.
	Write(offset uint32, v []byte) bool
}

// ValueType is a WebAssembly value type, in its binary encoding (the same
// values as wazero's api.ValueType).
type ValueType = byte

// The value types host functions use.
const (
	I32 ValueType = 0x7f
	I64 ValueType = 0x7e
)

// Function is one import of the wasmprov_v1 module, in a form any engine
// can bind: Fn reads its parameters from stack and writes its results back
// to stack[0:], like wazero's api.GoModuleFunc. The *Call it serves comes
// from ctx (WithCall).
type Function struct {
	Name            string
	Params, Results []ValueType
	Fn              func(ctx context.Context, mem Memory, stack []uint64)
}

// Functions returns every wasmprov_v1 import, sorted by name. An engine
// binds them once; the same table serves every instance and provider. It
// is built once and every call returns that one slice, which callers must
// not modify: an engine may recognise it by identity (the wazero engine
// shares a compiled module between compiles given the same slice).
func Functions() []Function { return functions() }

var functions = sync.OnceValue(func() []Function {
	fns := []Function{
		{abi.ImportInput, []ValueType{I32, I32, I32}, []ValueType{I64}, input},
		{abi.ImportTakeResult, []ValueType{I32, I32}, []ValueType{I64}, takeResult},
		{abi.ImportOutput, []ValueType{I32, I32}, []ValueType{I32}, output},
		{abi.ImportSetError, []ValueType{I32, I32, I32, I32, I64}, []ValueType{I32}, setError},
		{abi.ImportLog, []ValueType{I32, I32, I32, I32, I32}, []ValueType{I32}, logFunc},
	}
	for name, d := range dataFuncs {
		fns = append(fns, Function{name, []ValueType{I32, I32, I32, I32}, []ValueType{I64}, d.hostFunc(name)})
	}
	slices.SortFunc(fns, func(a, b Function) int { return strings.Compare(a.Name, b.Name) })
	return fns
})

// Signatures returns the parameter and result types of every wasmprov_v1
// import, for validating a guest's imports at load time.
func Signatures() map[string][2][]ValueType {
	sigs := map[string][2][]ValueType{}
	for _, f := range Functions() {
		sigs[f.Name] = [2][]ValueType{f.Params, f.Results}
	}
	return sigs
}
