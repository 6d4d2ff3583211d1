package hostfuncs

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
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
	return d.fn(c.blocking(), c, req)
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

func (d dataFunc) wasm(name string) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		c := CallFrom(ctx)
		if c == nil {
			stack[0] = errnoResult(abi.ErrnoUnavailable)
			return
		}
		reqPtr, reqLen, buf, limit := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
		var out []byte
		var err error
		if int64(reqLen) > c.Env.limits().MaxRequestBytes {
			err = errorf(abi.ErrnoTooLarge, "%s request of %d bytes exceeds the limit", name, reqLen)
		} else {
			var req []byte
			if req, err = read(mod, reqPtr, reqLen); err == nil {
				out, err = c.Invoke(name, req)
			}
		}
		stack[0] = c.deliver(mod, out, err, buf, limit)
	}
}

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// Instantiate defines the wasmprov_v1 host module in r. Call it once per
// runtime, before instantiating guests.
func Instantiate(ctx context.Context, r wazero.Runtime) (api.Module, error) {
	b := r.NewHostModuleBuilder(abi.ModuleName)
	def := func(name string, fn api.GoModuleFunc, params []api.ValueType, results ...api.ValueType) {
		b.NewFunctionBuilder().WithGoModuleFunction(fn, params, results).Export(name)
	}
	def(abi.ImportInput, input, []api.ValueType{i32, i32, i32}, i64)
	def(abi.ImportTakeResult, takeResult, []api.ValueType{i32, i32}, i64)
	def(abi.ImportOutput, output, []api.ValueType{i32, i32}, i32)
	def(abi.ImportSetError, setError, []api.ValueType{i32, i32, i32, i32, i64}, i32)
	def(abi.ImportLog, logFunc, []api.ValueType{i32, i32, i32, i32, i32}, i32)
	for name, d := range dataFuncs {
		def(name, d.wasm(name), []api.ValueType{i32, i32, i32, i32}, i64)
	}
	m, err := b.Instantiate(ctx)
	if err != nil {
		return nil, fmt.Errorf("instantiating %s host module: %w", abi.ModuleName, err)
	}
	return m, nil
}

// Signatures returns the parameter and result types of every wasmprov_v1
// import, for validating a guest's imports at load time.
func Signatures() map[string][2][]api.ValueType {
	sigs := map[string][2][]api.ValueType{
		abi.ImportInput:      {{i32, i32, i32}, {i64}},
		abi.ImportTakeResult: {{i32, i32}, {i64}},
		abi.ImportOutput:     {{i32, i32}, {i32}},
		abi.ImportSetError:   {{i32, i32, i32, i32, i64}, {i32}},
		abi.ImportLog:        {{i32, i32, i32, i32, i32}, {i32}},
	}
	for name := range dataFuncs {
		sigs[name] = [2][]api.ValueType{{i32, i32, i32, i32}, {i64}}
	}
	return sigs
}
