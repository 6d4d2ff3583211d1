package hostmodule

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/wasmprov/wasmprov/abi"
)

// dataFunc is a host function with the data framing,
// (func (param $req i32) (param $req_len i32) (param $buf i32) (param $limit i32) (result i64)):
// a request document in, a result or an errno out. Built-in and custom
// functions alike are one of these, so the checks around them (ranges,
// capability, sizes, byte budget, uses per call) are written once, in
// hostFunc and run, and none can be skipped.
type dataFunc struct {
	// module and name are the import's; label names the function in
	// messages (its name in wasmprov_v1, module.name otherwise).
	module, name, label string
	// quota is the key its uses count against: http_do_bin shares
	// http_do's, so a guest cannot double its requests by alternating.
	quota string
	// granted refuses the use when the capability behind it is not
	// granted (NOT_DECLARED).
	granted func(c *Call) error
	// maxRequest and perCall are its request size and per-call use caps.
	maxRequest func(l Limits) int64
	perCall    func(l Limits) int64
	fn         func(ctx context.Context, c *Call, req []byte) ([]byte, error)
}

// builtin declares a wasmprov_v1 data function.
func builtin(name string, capability abi.Capability, perCall func(Limits) int64,
	fn func(context.Context, *Call, []byte) ([]byte, error)) dataFunc {
	return dataFunc{module: abi.ModuleName, name: name, label: name, quota: name,
		granted:    func(c *Call) error { return c.check(name, capability) },
		maxRequest: func(l Limits) int64 { return l.MaxRequestBytes },
		perCall:    perCall, fn: fn}
}

// core is a wasmprov_v1 function with a signature of its own.
type core struct {
	name            string
	params, results []ValueType
	fn              func(ctx context.Context, mem Memory, stack []uint64)
}

// The wasmprov_v1 module (abi/SPEC.md §6), in one place: the functions
// every guest has, then the data functions with the capability that grants
// each and its per-call cap. Functions, Signatures and Invoke read these.
var (
	coreFuncs = []core{
		{abi.ImportInput, []ValueType{I32, I32, I32}, []ValueType{I64}, input},
		{abi.ImportTakeResult, []ValueType{I32, I32}, []ValueType{I64}, takeResult},
		{abi.ImportOutput, []ValueType{I32, I32}, []ValueType{I32}, output},
		{abi.ImportSetError, []ValueType{I32, I32, I32, I32, I64}, []ValueType{I32}, setError},
		{abi.ImportLog, []ValueType{I32, I32, I32, I32, I32}, []ValueType{I32}, logFunc},
	}
	dataFuncs = []dataFunc{
		builtin(abi.ImportHTTP, abi.CapHTTP, func(l Limits) int64 { return l.MaxHTTPRequestsPerCall }, httpDo),
		withQuota(builtin(abi.ImportHTTPBin, abi.CapHTTP, func(l Limits) int64 { return l.MaxHTTPRequestsPerCall }, httpDoBin), abi.ImportHTTP),
		builtin(abi.ImportMachineUpdate, abi.CapMachineUpdate, func(l Limits) int64 { return l.MaxMachineUpdatesPerCall }, machineUpdate),
		builtin(abi.ImportPVList, abi.CapPVList, func(l Limits) int64 { return l.MaxPVListsPerCall }, pvList),
		builtin(abi.ImportConfigVar, abi.CapConfigVar, func(l Limits) int64 { return l.MaxConfigVarsPerCall }, configVar),
	}
)

func withQuota(d dataFunc, quota string) dataFunc { d.quota = quota; return d }

// dataParams and dataResults are the data framing's signature.
var (
	dataParams  = []ValueType{I32, I32, I32, I32}
	dataResults = []ValueType{I64}
)

// Invoke runs the wasmprov_v1 data function fn for the guest of c: the
// entry point of the native runner, which has no guest memory.
func (c *Call) Invoke(fn string, req []byte) ([]byte, error) {
	i := slices.IndexFunc(dataFuncs, func(d dataFunc) bool { return d.name == fn })
	if i < 0 {
		return nil, errorf(abi.ErrnoInvalid, "unknown host function %q", fn)
	}
	d := &dataFuncs[i]
	if err := c.admit(d, int64(len(req))); err != nil {
		return nil, err
	}
	return c.run(d, req)
}

// admit runs the checks before a data function reads its request: the
// capability, then the request's size.
func (c *Call) admit(d *dataFunc, reqLen int64) error {
	if err := d.granted(c); err != nil {
		return err
	}
	if max := d.maxRequest(c.Env.limits()); reqLen > max {
		return errorf(abi.ErrnoTooLarge, "%s request of %d bytes exceeds the limit of %d", d.label, reqLen, max)
	}
	return nil
}

// run counts a use of d against its per-call cap and runs it.
func (c *Call) run(d *dataFunc, req []byte) ([]byte, error) {
	if err := c.admitUse(d); err != nil {
		return nil, err
	}
	return d.fn(c.blocking(), c, req)
}

// admitUse counts a use of d against the call's cap. Past it the guest is
// refused, and warned about once per function.
func (c *Call) admitUse(d *dataFunc) error {
	max := d.perCall(c.Env.limits())
	if c.uses == nil {
		c.uses = make(map[string]int64, 1)
	}
	n := c.uses[d.quota]
	if n >= max {
		if n == max {
			c.uses[d.quota] = n + 1 // warn once
			c.logger().Warn("guest exceeded a host function's limit for one call; further uses are refused",
				"function", d.label, "limit", max)
		}
		if d.quota != d.label {
			return errorf(abi.ErrnoTooLarge, "this call has used %s and %s %d times: the limit is %d a call", d.quota, d.label, max, max)
		}
		return errorf(abi.ErrnoTooLarge, "this call has used %s %d times: the limit is %d a call", d.label, max, max)
	}
	c.uses[d.quota] = n + 1
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

// hostFunc is the wasm binding of a data function: the checks in the
// order of abi/SPEC.md §6.4 (ranges, capability, sizes), each once, then
// the function, then the result delivered.
func (d *dataFunc) hostFunc(ctx context.Context, mem Memory, stack []uint64) {
	c := CallFrom(ctx)
	if c == nil {
		stack[0] = errnoResult(abi.ErrnoUnavailable)
		return
	}
	reqPtr, reqLen, buf, limit := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	var out []byte
	err := checkRange(mem, d.label+" request", reqPtr, reqLen)
	if err == nil {
		err = checkRange(mem, "result buffer", buf, limit)
	}
	if err == nil {
		err = c.admit(d, int64(reqLen))
	}
	if err == nil {
		err = c.charge(int64(reqLen))
	}
	if err == nil {
		req, _ := read(mem, reqPtr, reqLen)
		out, err = c.run(d, req)
	}
	stack[0] = c.deliver(mem, out, err, buf, limit)
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

// Function is one host function import, in a form any engine can bind: Fn
// reads its parameters from stack and writes its results back to
// stack[0:], like wazero's api.GoModuleFunc. The *Call it serves comes from
// ctx (WithCall).
type Function struct {
	Module, Name    string
	Params, Results []ValueType
	Fn              func(ctx context.Context, mem Memory, stack []uint64)
}

// Functions returns every wasmprov_v1 import, sorted by name. An engine
// binds them once; the same table serves every instance and provider. It
// is built once and every call returns that one slice, which callers must
// not modify: an engine may recognise it by identity (the wazero engine
// shares a compiled module between compiles given the same slice).
func Functions() []Function { return functions() }

var functions = sync.OnceValue(func() []Function { return table(dataFuncs) })

// table lists coreFuncs and the data functions ds as Functions, sorted by
// module and name.
func table(ds []dataFunc) []Function {
	fns := make([]Function, 0, len(coreFuncs)+len(ds))
	for _, f := range coreFuncs {
		fns = append(fns, Function{abi.ModuleName, f.name, f.params, f.results, f.fn})
	}
	for i := range ds {
		fns = append(fns, Function{ds[i].module, ds[i].name, dataParams, dataResults, ds[i].hostFunc})
	}
	slices.SortFunc(fns, func(a, b Function) int {
		return cmp.Or(strings.Compare(a.Module, b.Module), strings.Compare(a.Name, b.Name))
	})
	return fns
}

// Signatures returns the parameter and result types of every import in
// fns, by module and name, for validating a guest's imports at load time.
func Signatures(fns []Function) map[[2]string][2][]ValueType {
	sigs := make(map[[2]string][2][]ValueType, len(fns))
	for _, f := range fns {
		sigs[[2]string{f.Module, f.Name}] = [2][]ValueType{f.Params, f.Results}
	}
	return sigs
}
