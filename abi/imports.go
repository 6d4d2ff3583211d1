package abi

// Names of the host functions in ModuleName. SPEC.md gives each one's WAT
// signature and semantics.
const (
	// ImportInput: (func (param $part i32) (param $buf i32) (param $limit i32) (result i64))
	ImportInput = "input"
	// ImportTakeResult: (func (param $buf i32) (param $limit i32) (result i64))
	ImportTakeResult = "take_result"
	// ImportOutput: (func (param $ptr i32) (param $len i32) (result i32))
	ImportOutput = "output"
	// ImportSetError: (func (param $reason i32) (param $reason_len i32)
	// (param $msg i32) (param $msg_len i32) (param $retry_after_ms i64) (result i32))
	ImportSetError = "set_error"
	// ImportLog: (func (param $level i32) (param $msg i32) (param $msg_len i32)
	// (param $attrs i32) (param $attrs_len i32) (result i32))
	ImportLog = "log"
	// ImportHTTP: (func (param $req i32) (param $req_len i32) (param $buf i32) (param $limit i32) (result i64))
	ImportHTTP = "http_do"
	// ImportHTTPBin: same signature as ImportHTTP; the request and the
	// result are binary frames (httpframe.go) instead of JSON with base64
	// bodies. Same capability, policy, bounds and per-call cap as http_do.
	ImportHTTPBin = "http_do_bin"
	// ImportMachineUpdate: same signature as ImportHTTP.
	ImportMachineUpdate = "machine_update"
	// ImportPVList: same signature as ImportHTTP.
	ImportPVList = "pv_list"
	// ImportConfigVar: same signature as ImportHTTP.
	ImportConfigVar = "config_var"
)

// ImportCapability maps an import name to the capability that grants it. The
// core imports (input, take_result, output, set_error) need none.
func ImportCapability(name string) (Capability, bool) {
	switch name {
	case ImportInput, ImportTakeResult, ImportOutput, ImportSetError:
		return 0, true
	case ImportLog:
		return CapLog, true
	case ImportHTTP, ImportHTTPBin:
		return CapHTTP, true
	case ImportMachineUpdate:
		return CapMachineUpdate, true
	case ImportPVList:
		return CapPVList, true
	case ImportConfigVar:
		return CapConfigVar, true
	}
	return 0, false
}
