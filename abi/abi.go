// Package abi holds the constants and wire types of the wasmprov Provider
// ABI. SPEC.md in this directory is the normative description; this package
// is its Go transcription, shared by the host (runtime, hostmodule) and by the
// Go guest SDK.
//
// The package depends on the standard library only and compiles for both the
// host and GOOS=wasip1, so that host and guest can never disagree about a
// constant or a field name.
package abi

import "strconv"

// Version is the ABI version implemented by this package. A guest reports
// the version it was built against from its ExportABIVersion export; the host
// refuses to load a module whose version it does not implement.
const Version = 1

// ModuleName is the import module that carries every wasmprov host function.
// The major version is part of the name so that a future incompatible ABI can
// be served next to this one by the same host.
const ModuleName = "wasmprov_v1"

// Exports every provider module must have, beside "memory" and "_initialize".
const (
	// ExportABIVersion: (func (result i32)) returning Version.
	ExportABIVersion = "wasmprov_abi_version"
	// ExportCapabilities: (func (result i64)) returning the Capability bits
	// the guest needs.
	ExportCapabilities = "wasmprov_capabilities"
	// ExportMemory is the guest's linear memory, through which every byte
	// crosses the boundary.
	ExportMemory = "memory"
	// ExportInitialize is the WASI reactor initialiser; the host runs it once
	// per instance before any other export.
	ExportInitialize = "_initialize"
	// ExportCommandStart is the entry point of a WASI command. A provider
	// must not export it (SPEC.md §3): it is a reactor, and the host never
	// runs a command's main.
	ExportCommandStart = "_start"
)

// Method identifies a provider method: the eight of cloud.Provider (the
// seed's interface), which every module exports, and the optional ones
// machine-controller added since. Every method is one export with the
// signature (func (result i32)): it takes no parameters (the guest pulls
// its inputs with the "input" import) and returns a Status.
type Method uint8

// The eight required methods, in the order of the seed interface, then the
// optional ones.
const (
	MethodAddDefaults Method = iota + 1
	MethodValidate
	MethodGet
	MethodGetCloudConfig
	MethodCreate
	MethodDelete
	MethodMachineMetricsLabels
	MethodMigrateUID
	// MethodSetMetricsForMachines is optional (SPEC.md §4.3): a module
	// without its export reports no metrics, as machine-controller's no-op
	// implementations do.
	MethodSetMetricsForMachines
)

// Methods lists the required methods, in order: a module must export each.
var Methods = []Method{
	MethodAddDefaults, MethodValidate, MethodGet, MethodGetCloudConfig,
	MethodCreate, MethodDelete, MethodMachineMetricsLabels, MethodMigrateUID,
}

// OptionalMethods lists the methods a module may export; a host calls one
// only if it is exported.
var OptionalMethods = []Method{MethodSetMetricsForMachines}

var methodNames = [...]string{
	MethodAddDefaults:          "AddDefaults",
	MethodValidate:             "Validate",
	MethodGet:                  "Get",
	MethodGetCloudConfig:       "GetCloudConfig",
	MethodCreate:               "Create",
	MethodDelete:               "Delete",
	MethodMachineMetricsLabels: "MachineMetricsLabels",
	MethodMigrateUID:           "MigrateUID",

	MethodSetMetricsForMachines: "SetMetricsForMachines",
}

var methodExports = [...]string{
	MethodAddDefaults:          "wasmprov_add_defaults",
	MethodValidate:             "wasmprov_validate",
	MethodGet:                  "wasmprov_get",
	MethodGetCloudConfig:       "wasmprov_get_cloud_config",
	MethodCreate:               "wasmprov_create",
	MethodDelete:               "wasmprov_delete",
	MethodMachineMetricsLabels: "wasmprov_machine_metrics_labels",
	MethodMigrateUID:           "wasmprov_migrate_uid",

	MethodSetMetricsForMachines: "wasmprov_set_metrics_for_machines",
}

// String returns the Go method name, e.g. "AddDefaults".
func (m Method) String() string {
	if m.Valid() {
		return methodNames[m]
	}
	return "Method(" + strconv.Itoa(int(m)) + ")"
}

// Export returns the name of the export implementing m.
func (m Method) Export() string {
	if m.Valid() {
		return methodExports[m]
	}
	return ""
}

// Valid reports whether m is a method of this ABI version, required or
// optional.
func (m Method) Valid() bool { return m >= MethodAddDefaults && m <= MethodSetMetricsForMachines }

// Optional reports whether a module may leave m unexported.
func (m Method) Optional() bool { return m == MethodSetMetricsForMachines }

// Inputs returns the Input parts the host offers to m. Parts not listed are
// answered with ErrnoUnavailable.
func (m Method) Inputs() []Input {
	switch m {
	case MethodAddDefaults, MethodValidate, MethodGetCloudConfig:
		return []Input{InputSpec, InputProviderSpec, InputLogLevel}
	case MethodCreate:
		return []Input{InputMachine, InputSpec, InputProviderSpec, InputUserdata, InputLogLevel}
	case MethodMigrateUID:
		return []Input{InputMachine, InputSpec, InputProviderSpec, InputNewUID, InputLogLevel}
	case MethodGet, MethodDelete, MethodMachineMetricsLabels:
		return []Input{InputMachine, InputSpec, InputProviderSpec, InputLogLevel}
	case MethodSetMetricsForMachines:
		return []Input{InputMachineList, InputLogLevel}
	}
	return nil
}

// Status is what a method export returns.
type Status int32

const (
	// StatusOK: the method succeeded; its result (if any) was set with "output".
	StatusOK Status = 0
	// StatusError: a retriable failure (machine-controller requeues). The
	// message and an optional retry hint were set with "set_error".
	StatusError Status = 1
	// StatusTerminal: a failure that needs a person (machine-controller's
	// TerminalError); the reason must be a MachineStatusError such as
	// "InvalidConfiguration".
	StatusTerminal Status = 2
	// StatusNotFound: the instance does not exist (ErrInstanceNotFound).
	StatusNotFound Status = 3
	// StatusPanic: the guest caught a panic of its own. The host reports an
	// error and discards the instance, since the guest's state may be torn.
	StatusPanic Status = 4
	// StatusInProgress: only from Delete, only from a module declaring
	// CapAsyncDelete. Deletion has started and is not finished: the host
	// calls Delete again later (machine-controller's Cleanup returning
	// false). It is not an error.
	StatusInProgress Status = 5
)

// String names the status.
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusError:
		return "error"
	case StatusTerminal:
		return "terminal"
	case StatusNotFound:
		return "not-found"
	case StatusInProgress:
		return "in-progress"
	case StatusPanic:
		return "panic"
	}
	return "Status(" + strconv.Itoa(int(s)) + ")"
}

// Input selects one of the documents a method can pull with the "input"
// import. Inputs are pulled lazily: a method that only needs the provider
// spec never pays for encoding the whole Machine.
type Input int32

const (
	// InputMachine is the whole Machine, JSON in the Kubernetes wire format.
	InputMachine Input = 1
	// InputSpec is the MachineSpec (the Machine's spec, or the spec argument
	// of AddDefaults, Validate and GetCloudConfig), JSON.
	InputSpec Input = 2
	// InputProviderSpec is spec.providerSpec.value exactly as stored (raw
	// JSON, "null" when absent). It never needs re-encoding on the host.
	InputProviderSpec Input = 3
	// InputUserdata is the userdata argument of Create, raw bytes.
	InputUserdata Input = 4
	// InputNewUID is the new UID argument of MigrateUID, raw bytes.
	InputNewUID Input = 5
	// InputLogLevel is the lowest log level the host records, as a decimal
	// (-4 debug, 0 info, 4 warn, 8 error). A guest checks it before building
	// a log record, so disabled debug logging costs nothing.
	InputLogLevel Input = 6
	// InputMachineList is the MachineList argument of
	// SetMetricsForMachines, JSON in the Kubernetes wire format.
	InputMachineList Input = 7
)

// String names the input part.
func (i Input) String() string {
	switch i {
	case InputMachine:
		return "machine"
	case InputSpec:
		return "spec"
	case InputProviderSpec:
		return "provider_spec"
	case InputUserdata:
		return "userdata"
	case InputNewUID:
		return "new_uid"
	case InputLogLevel:
		return "log_level"
	case InputMachineList:
		return "machine_list"
	}
	return "Input(" + strconv.Itoa(int(i)) + ")"
}

// Errno values are the negative results of host functions that return i64.
// A non-negative result is a length in bytes. For every Errno except
// ErrnoNotDeclared, a UTF-8 message explaining the failure is left as the
// pending result and can be read with "take_result".
type Errno int64

const (
	// ErrnoNotDeclared: the guest called a host function of a capability it
	// did not declare (or the host's policy did not grant it).
	ErrnoNotDeclared Errno = -1
	// ErrnoDenied: the host's policy refused the request (e.g. HTTP to a host
	// that is not allowed, a Secret the Machine does not reference).
	ErrnoDenied Errno = -2
	// ErrnoInvalid: the arguments were invalid: out-of-bounds memory, a
	// request that is not valid JSON, an unknown input part.
	ErrnoInvalid Errno = -3
	// ErrnoFailed: the operation was attempted and failed (network error,
	// API server error, ...).
	ErrnoFailed Errno = -4
	// ErrnoUnavailable: the operation is not available in this method (e.g.
	// machine_update outside Create/Delete, the userdata input outside Create).
	ErrnoUnavailable Errno = -5
	// ErrnoTooLarge: a request or result exceeded the host's size limit.
	ErrnoTooLarge Errno = -6
	// ErrnoNotFound: the thing asked for does not exist (a Secret key, an
	// environment variable, ...).
	ErrnoNotFound Errno = -7
)

// String names the errno.
func (e Errno) String() string {
	switch e {
	case ErrnoNotDeclared:
		return "not-declared"
	case ErrnoDenied:
		return "denied"
	case ErrnoInvalid:
		return "invalid"
	case ErrnoFailed:
		return "failed"
	case ErrnoUnavailable:
		return "unavailable"
	case ErrnoTooLarge:
		return "too-large"
	case ErrnoNotFound:
		return "not-found"
	}
	return "Errno(" + strconv.FormatInt(int64(e), 10) + ")"
}

// Capability is a bit in the mask returned by ExportCapabilities. A guest
// declares what it needs; the host grants the intersection with its policy.
type Capability uint64

const (
	// CapLog: the "log" import.
	CapLog Capability = 1 << iota
	// CapHTTP: the "http_do" and "http_do_bin" imports.
	CapHTTP
	// CapMachineUpdate: the "machine_update" import (Create and Delete only).
	CapMachineUpdate
	// CapPVList: the "pv_list" import (Create and Delete only).
	CapPVList
	// CapConfigVar: the "config_var" import.
	CapConfigVar
	// CapClock: WASI wall and monotonic clocks read the host's real clocks,
	// and sleeping really sleeps. Without it the clocks are deterministic
	// fakes.
	CapClock
	// CapRandom declares that the module reads randomness. It grants
	// nothing: WASI random_get reads the host's crypto/rand for every
	// guest (a deterministic source would hand every instance the same
	// "random" keys, a provider's throw-away SSH key among them), so a
	// policy cannot withhold it. The bit stays so that modules declaring
	// it keep loading and inspect shows it.
	CapRandom
	// CapAsyncDelete is a protocol bit, not a grant: the module's Delete
	// may return StatusInProgress. A host that knows the bit always
	// accepts it; one that does not refuses the module at load (unknown
	// bits make a module invalid), instead of reading IN_PROGRESS as a
	// protocol violation mid-deletion.
	CapAsyncDelete
)

// AllCapabilities is every capability this ABI version defines.
const AllCapabilities = CapLog | CapHTTP | CapMachineUpdate | CapPVList | CapConfigVar | CapClock | CapRandom | CapAsyncDelete

// ProtocolCapabilities are the bits a policy cannot withhold: they declare
// how the module speaks the ABI (CapAsyncDelete) or what every guest gets
// anyway (CapRandom), not what it may use.
const ProtocolCapabilities = CapAsyncDelete | CapRandom

var capabilityNames = []struct {
	c    Capability
	name string
}{
	{CapLog, "log"}, {CapHTTP, "http"}, {CapMachineUpdate, "machine_update"},
	{CapPVList, "pv_list"}, {CapConfigVar, "config_var"}, {CapClock, "clock"},
	{CapRandom, "random"}, {CapAsyncDelete, "async_delete"},
}

// Names lists the names of the capabilities set in c, in bit order.
func (c Capability) Names() []string {
	var names []string
	for _, n := range capabilityNames {
		if c&n.c != 0 {
			names = append(names, n.name)
		}
	}
	return names
}

// Has reports whether every bit of want is set in c.
func (c Capability) Has(want Capability) bool { return c&want == want }

// ParseCapability maps a capability name ("http", "pv_list", ...) to its bit.
func ParseCapability(name string) (Capability, bool) {
	for _, n := range capabilityNames {
		if n.name == name {
			return n.c, true
		}
	}
	return 0, false
}

// Log levels of the "log" import. They are slog's levels, so the host maps
// them one to one.
const (
	LevelDebug int32 = -4
	LevelInfo  int32 = 0
	LevelWarn  int32 = 4
	LevelError int32 = 8
)
