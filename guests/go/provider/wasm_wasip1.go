//go:build wasip1

package provider

import (
	"context"
	"unsafe"

	"github.com/wasmprov/wasmprov/abi"
)

// The wasmprov_v1 imports. Pointers are offsets in this module's memory;
// the host copies what it needs before returning, so Go's GC may reclaim the
// buffers afterwards.

//go:wasmimport wasmprov_v1 input
func hostInput(part int32, buf unsafe.Pointer, limit int32) int64

//go:wasmimport wasmprov_v1 take_result
func hostTakeResult(buf unsafe.Pointer, limit int32) int64

//go:wasmimport wasmprov_v1 output
func hostOutput(ptr unsafe.Pointer, n int32) int32

//go:wasmimport wasmprov_v1 set_error
func hostSetError(reason unsafe.Pointer, reasonLen int32, msg unsafe.Pointer, msgLen int32, retryAfterMillis int64) int32

//go:wasmimport wasmprov_v1 log
func hostLog(level int32, msg unsafe.Pointer, msgLen int32, attrs unsafe.Pointer, attrsLen int32) int32

//go:wasmimport wasmprov_v1 http_do
func hostHTTP(req unsafe.Pointer, reqLen int32, buf unsafe.Pointer, limit int32) int64

//go:wasmimport wasmprov_v1 http_do_bin
func hostHTTPBin(req unsafe.Pointer, reqLen int32, buf unsafe.Pointer, limit int32) int64

//go:wasmimport wasmprov_v1 machine_update
func hostMachineUpdate(req unsafe.Pointer, reqLen int32, buf unsafe.Pointer, limit int32) int64

//go:wasmimport wasmprov_v1 pv_list
func hostPVList(req unsafe.Pointer, reqLen int32, buf unsafe.Pointer, limit int32) int64

//go:wasmimport wasmprov_v1 config_var
func hostConfigVar(req unsafe.Pointer, reqLen int32, buf unsafe.Pointer, limit int32) int64

//go:wasmexport wasmprov_abi_version
func exportABIVersion() int32 { return abi.Version }

//go:wasmexport wasmprov_capabilities
func exportCapabilities() int64 { return int64(registered.caps) }

//go:wasmexport wasmprov_add_defaults
func exportAddDefaults() int32 { return serve(abi.MethodAddDefaults) }

//go:wasmexport wasmprov_validate
func exportValidate() int32 { return serve(abi.MethodValidate) }

//go:wasmexport wasmprov_get
func exportGet() int32 { return serve(abi.MethodGet) }

//go:wasmexport wasmprov_get_cloud_config
func exportGetCloudConfig() int32 { return serve(abi.MethodGetCloudConfig) }

//go:wasmexport wasmprov_create
func exportCreate() int32 { return serve(abi.MethodCreate) }

//go:wasmexport wasmprov_delete
func exportDelete() int32 { return serve(abi.MethodDelete) }

//go:wasmexport wasmprov_machine_metrics_labels
func exportMachineMetricsLabels() int32 { return serve(abi.MethodMachineMetricsLabels) }

//go:wasmexport wasmprov_migrate_uid
func exportMigrateUID() int32 { return serve(abi.MethodMigrateUID) }

// The optional method: the SDK always exports it, and a provider that does
// not implement MetricsReporter answers it with no samples.
//
//go:wasmexport wasmprov_set_metrics_for_machines
func exportSetMetricsForMachines() int32 { return serve(abi.MethodSetMetricsForMachines) }

func serve(m abi.Method) int32 {
	return int32(Dispatch(context.Background(), wasmHost{}, registered.p, m))
}

// scratch is the first-try buffer for host results. Results that fit (most
// do) cost one host call; larger ones are fetched with take_result into a
// buffer of the exact size. One instance serves one call at a time, so a
// single buffer is safe.
var scratch = make([]byte, 16<<10)

type wasmHost struct{}

func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

func (wasmHost) Input(part abi.Input) ([]byte, error) {
	n := hostInput(int32(part), ptr(scratch), int32(len(scratch)))
	return collect("input", n)
}

// collect turns a host function's i64 result into bytes or a *HostError.
func collect(fn string, n int64) ([]byte, error) {
	if n < 0 {
		return nil, hostError(fn, abi.Errno(n))
	}
	if int(n) <= len(scratch) {
		return append([]byte(nil), scratch[:n]...), nil
	}
	buf := make([]byte, n)
	if got := hostTakeResult(ptr(buf), int32(n)); got != n {
		return nil, &HostError{Func: fn, Errno: abi.ErrnoInvalid, Message: "take_result returned an unexpected length"}
	}
	return buf, nil
}

// hostError reads the message the host left for a failed call.
func hostError(fn string, errno abi.Errno) error {
	e := &HostError{Func: fn, Errno: errno}
	if errno == abi.ErrnoNotDeclared {
		e.Message = "capability not declared or not granted"
		return e
	}
	n := hostTakeResult(nil, 0)
	if n > 0 {
		buf := make([]byte, n)
		if hostTakeResult(ptr(buf), int32(n)) == n {
			e.Message = string(buf)
		}
	}
	if e.Message == "" {
		e.Message = errno.String()
	}
	return e
}

func (wasmHost) Output(b []byte) error {
	if rc := hostOutput(ptr(b), int32(len(b))); rc != 0 {
		return hostError("output", abi.Errno(rc))
	}
	return nil
}

func (wasmHost) SetError(reason, message string, retryAfterMillis int64) {
	r, m := []byte(reason), []byte(message)
	hostSetError(ptr(r), int32(len(r)), ptr(m), int32(len(m)), retryAfterMillis)
}

// BinaryHTTP: this SDK imports http_do_bin, so the host that loaded the
// module has it (a host without it refuses the module at load, SPEC §2).
func (wasmHost) BinaryHTTP() bool { return true }

func (wasmHost) Log(level int32, message string, attrs []byte) {
	m := []byte(message)
	hostLog(level, ptr(m), int32(len(m)), ptr(attrs), int32(len(attrs)))
}

func (wasmHost) Call(fn string, req []byte) ([]byte, error) {
	var n int64
	switch fn {
	case abi.ImportHTTP:
		n = hostHTTP(ptr(req), int32(len(req)), ptr(scratch), int32(len(scratch)))
	case abi.ImportHTTPBin:
		n = hostHTTPBin(ptr(req), int32(len(req)), ptr(scratch), int32(len(scratch)))
	case abi.ImportMachineUpdate:
		n = hostMachineUpdate(ptr(req), int32(len(req)), ptr(scratch), int32(len(scratch)))
	case abi.ImportPVList:
		n = hostPVList(ptr(req), int32(len(req)), ptr(scratch), int32(len(scratch)))
	case abi.ImportConfigVar:
		n = hostConfigVar(ptr(req), int32(len(req)), ptr(scratch), int32(len(scratch)))
	default:
		return nil, &HostError{Func: fn, Errno: abi.ErrnoInvalid, Message: "unknown host function"}
	}
	return collect(fn, n)
}

// HostFunc is a custom host function as a guest imports it (abi/SPEC.md
// §6.5): an embedder's function, declared in the guest with its module
// and name, in the data functions' framing:
//
//	//go:wasmimport example_ipam_v1 allocate
//	func ipamAllocate(req unsafe.Pointer, reqLen int32, buf unsafe.Pointer, limit int32) int64
type HostFunc func(req unsafe.Pointer, reqLen int32, buf unsafe.Pointer, limit int32) int64

// CallHost calls the custom host function fn with the request document
// req and returns its result, fetching a large one with take_result, or a
// *HostError with the errno and the host's message (name names the
// function in it). Importing the function declares its capability; the
// host's policy must grant it, or the module does not load.
func CallHost(name string, fn HostFunc, req []byte) ([]byte, error) {
	return collect(name, fn(ptr(req), int32(len(req)), ptr(scratch), int32(len(scratch))))
}
