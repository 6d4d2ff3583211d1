package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/wasmprov/wasmprov/abi"
)

// Host is the host side of the ABI as the SDK sees it. Inside a wasm module
// it is implemented with the wasmprov_v1 imports; a native host
// (package runtime/native) implements it in Go to run the same provider code
// in-process. Provider authors never implement it.
type Host interface {
	// Input returns an input part of the current call.
	Input(part abi.Input) ([]byte, error)
	// Output sets the result document of the current call.
	Output(b []byte) error
	// SetError sets the error reason, message and retry hint of the call.
	SetError(reason, message string, retryAfterMillis int64)
	// Log emits a log record; attrs is a JSON object or empty.
	Log(level int32, message string, attrs []byte)
	// Call invokes a data host function (abi.ImportHTTP, ...) with a JSON
	// request and returns its result, or a *HostError.
	Call(fn string, request []byte) ([]byte, error)
}

type hostKey struct{}

// hostFrom returns the Host of the current call.
func hostFrom(ctx context.Context) (Host, error) {
	if h, ok := ctx.Value(hostKey{}).(Host); ok {
		return h, nil
	}
	return nil, errors.New("wasmprov: no host in context: call host helpers with the context the SDK passed to the provider method")
}

// Dispatch runs method m of p against h and returns the status the export
// reports, for a provider declaring what Register declared (Capabilities).
// The wasm exports call it with the registered provider. Provider authors
// never call it.
func Dispatch(ctx context.Context, h Host, p Provider, m abi.Method) abi.Status {
	return DispatchDeclared(ctx, h, p, registered.caps, m)
}

// DispatchDeclared is Dispatch for a provider declaring declared, which
// decides how errors map onto statuses (DeletionInProgress is IN_PROGRESS
// only with abi.CapAsyncDelete). A native host (package runtime/native)
// calls it with a provider value and the capabilities it serves it with.
// Provider authors never call it.
func DispatchDeclared(ctx context.Context, h Host, p Provider, declared abi.Capability, m abi.Method) (status abi.Status) {
	if p == nil {
		h.SetError("", "no provider registered: call provider.Register from init", 0)
		return abi.StatusError
	}
	ctx = context.WithValue(ctx, hostKey{}, h)
	defer func() {
		// A panic must never unwind into the host: report it, and let the
		// host discard this instance since the provider's state may be torn.
		if r := recover(); r != nil {
			h.SetError("", fmt.Sprintf("panic in %s: %v\n%s", m, r, debug.Stack()), 0)
			status = abi.StatusPanic
		}
	}()
	out, err := call(ctx, h, p, m)
	if err != nil {
		return reportError(h, err, m, declared)
	}
	if out != nil {
		if err := h.Output(out); err != nil {
			return reportError(h, err, m, declared)
		}
	}
	return abi.StatusOK
}

func call(ctx context.Context, h Host, p Provider, m abi.Method) ([]byte, error) {
	switch m {
	case abi.MethodAddDefaults:
		spec, err := inputSpec(h)
		if err != nil {
			return nil, err
		}
		spec, err = p.AddDefaults(ctx, spec)
		if err != nil {
			return nil, err
		}
		return json.Marshal(spec)
	case abi.MethodValidate:
		spec, err := inputSpec(h)
		if err != nil {
			return nil, err
		}
		return nil, p.Validate(ctx, spec)
	case abi.MethodGetCloudConfig:
		spec, err := inputSpec(h)
		if err != nil {
			return nil, err
		}
		config, name, err := p.GetCloudConfig(ctx, spec)
		if err != nil {
			return nil, err
		}
		return json.Marshal(abi.CloudConfig{Config: config, Name: name})
	case abi.MethodGet:
		machine, err := inputMachine(h)
		if err != nil {
			return nil, err
		}
		return instanceOutput(p.Get(ctx, machine))
	case abi.MethodCreate:
		machine, err := inputMachine(h)
		if err != nil {
			return nil, err
		}
		userdata, err := h.Input(abi.InputUserdata)
		if err != nil {
			return nil, err
		}
		return instanceOutput(p.Create(ctx, machine, string(userdata)))
	case abi.MethodDelete:
		machine, err := inputMachine(h)
		if err != nil {
			return nil, err
		}
		return nil, p.Delete(ctx, machine)
	case abi.MethodMachineMetricsLabels:
		machine, err := inputMachine(h)
		if err != nil {
			return nil, err
		}
		labels, err := p.MachineMetricsLabels(ctx, machine)
		if err != nil {
			return nil, err
		}
		if labels == nil {
			labels = map[string]string{}
		}
		return json.Marshal(labels)
	case abi.MethodMigrateUID:
		machine, err := inputMachine(h)
		if err != nil {
			return nil, err
		}
		uid, err := h.Input(abi.InputNewUID)
		if err != nil {
			return nil, err
		}
		return nil, p.MigrateUID(ctx, machine, string(uid))
	case abi.MethodSetMetricsForMachines:
		return setMetrics(ctx, h, p)
	}
	return nil, fmt.Errorf("unknown method %d", m)
}

func inputSpec(h Host) (MachineSpec, error) {
	var spec MachineSpec
	b, err := h.Input(abi.InputSpec)
	if err != nil {
		return spec, err
	}
	if err := decodeMachineSpec(b, &spec); err != nil {
		return spec, Terminal(InvalidConfiguration, "failed to decode machine spec: %v", err)
	}
	return spec, nil
}

func inputMachine(h Host) (*Machine, error) {
	b, err := h.Input(abi.InputMachine)
	if err != nil {
		return nil, err
	}
	m := new(Machine)
	if err := decodeMachine(b, m); err != nil {
		return nil, Terminal(InvalidConfiguration, "failed to decode machine: %v", err)
	}
	return m, nil
}

func instanceOutput(inst *Instance, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	if inst == nil {
		return nil, errors.New("provider returned neither an instance nor an error")
	}
	status := string(inst.Status)
	if status == "" {
		status = abi.InstanceUnknown
	}
	return json.Marshal(abi.Instance{
		Name: inst.Name, ID: inst.ID, ProviderID: inst.ProviderID,
		Addresses: inst.Addresses, Status: status,
	})
}

// setMetrics serves SetMetricsForMachines: a provider without
// MetricsReporter answers OK without output, which the host reads as no
// samples (and it never pays for the MachineList).
func setMetrics(ctx context.Context, h Host, p Provider) ([]byte, error) {
	r, ok := p.(MetricsReporter)
	if !ok {
		return nil, nil
	}
	b, err := h.Input(abi.InputMachineList)
	if err != nil {
		return nil, err
	}
	machines, err := decodeMachineList(b)
	if err != nil {
		return nil, fmt.Errorf("failed to decode the machine list: %w", err)
	}
	metrics, err := r.SetMetricsForMachines(ctx, machines)
	if err != nil {
		return nil, err
	}
	if metrics == nil {
		metrics = []Metric{}
	}
	return json.Marshal(abi.MetricSamples{Metrics: metrics})
}

// reportError maps err onto a status and hands the message to the host.
// declared is what the module declared: an SDK module never returns a
// status its declaration does not allow.
func reportError(h Host, err error, m abi.Method, declared abi.Capability) abi.Status {
	var te *TerminalError
	if errors.As(err, &te) {
		h.SetError(string(te.Reason), te.Message, 0)
		return abi.StatusTerminal
	}
	if errors.Is(err, ErrInstanceNotFound) {
		h.SetError("", err.Error(), 0)
		return abi.StatusNotFound
	}
	if errors.Is(err, ErrDeletionInProgress) {
		msg, retry := err.Error(), time.Duration(0)
		var ip *DeletionInProgressError
		if errors.As(err, &ip) {
			retry = ip.RetryAfter
			if err == error(ip) && ip.Message != "" {
				// The host says "deletion in progress" itself.
				msg = ip.Message
			}
		}
		if m == abi.MethodDelete && declared.Has(abi.CapAsyncDelete) {
			h.SetError("", msg, retry.Milliseconds())
			return abi.StatusInProgress
		}
		// What a provider meant before IN_PROGRESS: not done, call again.
		h.SetError("", err.Error(), retry.Milliseconds())
		return abi.StatusError
	}
	var re *RetryableError
	if errors.As(err, &re) {
		h.SetError("", err.Error(), re.RetryAfter.Milliseconds())
		return abi.StatusError
	}
	h.SetError("", err.Error(), 0)
	return abi.StatusError
}
