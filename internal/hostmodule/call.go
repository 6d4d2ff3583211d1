package hostmodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/guesttext"

	"k8s.io/apimachinery/pkg/types"
)

// Call is the state of one provider method call. The runtime creates one
// per call, puts it in the context given to the guest (WithCall), and reads
// the guest's output and error from it afterwards.
type Call struct {
	Env    *Env
	Method abi.Method

	// Machine is the Machine argument (Get, Create, Delete,
	// MachineMetricsLabels, MigrateUID). machine_update replaces it with the
	// updated Machine.
	Machine *clusterv1alpha1.Machine
	// Spec is the MachineSpec argument (AddDefaults, Validate,
	// GetCloudConfig); for the other methods it is nil and &Machine.Spec is
	// used.
	Spec *clusterv1alpha1.MachineSpec
	// Machines is the MachineList argument of SetMetricsForMachines.
	Machines *clusterv1alpha1.MachineList
	Userdata string
	NewUID   types.UID
	// Data is the caller's host side of the data functions; nil offers
	// none of them.
	Data *Data

	// Granted is what the guest declared, intersected with the policy.
	Granted abi.Capability

	// log carries provider, method and machine attributes; built on first
	// use because most calls never log.
	log *slog.Logger

	// ctx is the caller's context. The guest may run under a context that
	// does not carry cancellation (to avoid a goroutine per call); host
	// functions use this one so that HTTP requests are cancelled with the
	// call.
	ctx context.Context
	// deadline bounds blocking host work when ctx has no deadline of its
	// own (the policy's call timeout). The context carrying it is made only
	// when a host function needs one: most calls never block.
	deadline   time.Time
	hostCtx    context.Context
	cancelHost context.CancelFunc

	inputs  [abi.InputMachineList + 1][]byte
	pending []byte

	// What the caller handed in, before the guest could change it
	// (captureCaller): the Secret/ConfigMap references config_var may
	// resolve and the Machine's namespace.
	captured        bool
	callerRefs      []ConfigRef
	callerNamespace string

	// sent counts the bytes the guest handed the host in this call
	// (results, errors, logs, requests), against Limits.MaxBytesPerCall.
	sent int64
	// logged and logRecords count what the guest logged in this call;
	// logCapped is set once the first record past the cap was refused.
	logged, logRecords int64
	logCapped          bool
	// uses counts the data host functions' admitted uses in this call, by
	// name (Limits.perCall); made on first use.
	uses map[string]int64

	// Output is the result document set by the guest's "output";
	// OutputSet tells whether the guest set one at all (Output is empty
	// for an empty document too), and OutputRefused is the errno of the
	// guest's last refused "output" (0 when none), so that an error about
	// a missing document can say which it was.
	Output        []byte
	OutputSet     bool
	OutputRefused abi.Errno
	// Error fields are set by the guest's "set_error"; ErrSet tells whether
	// the guest called it.
	ErrSet     bool
	ErrReason  string
	ErrMessage string
	RetryAfter time.Duration
}

// NewCall returns a Call for method m of the provider described by env.
func NewCall(ctx context.Context, env *Env, m abi.Method, granted abi.Capability) *Call {
	return &Call{Env: env, Method: m, Granted: granted, ctx: ctx}
}

// SetContext replaces the caller's context of c, e.g. after the runtime
// added the policy's call timeout.
func SetContext(c *Call, ctx context.Context) { c.ctx = ctx }

// SetDeadline sets the deadline that host functions apply to blocking work
// (HTTP, API reads) when the caller's context has none.
func (c *Call) SetDeadline(t time.Time) { c.deadline = t }

// blocking returns the context for host work that may block: the caller's,
// bounded by the call's deadline.
func (c *Call) blocking() context.Context {
	if c.hostCtx == nil {
		c.hostCtx = c.ctx
		if _, ok := c.ctx.Deadline(); !ok && !c.deadline.IsZero() {
			c.hostCtx, c.cancelHost = context.WithDeadline(c.ctx, c.deadline)
		}
	}
	return c.hostCtx
}

// DeadlineExceeded tells whether the call's deadline passed while host
// work was bounded by it. A host function blocked at the deadline answers
// the guest (FAILED, TIMEOUT) so it can unwind, and the guest may then
// return before the engine's own interrupt fires: its answer came after
// the deadline all the same, and the call is a timeout, not the guest's
// error.
func (c *Call) DeadlineExceeded() bool {
	return c.hostCtx != nil && errors.Is(c.hostCtx.Err(), context.DeadlineExceeded)
}

// Release frees what the call holds; call it when the call is over.
func (c *Call) Release() {
	if c.cancelHost != nil {
		c.cancelHost()
	}
}

// Context returns the caller's context.
func (c *Call) Context() context.Context { return c.ctx }

type callKey struct{}

// WithCall returns a context carrying c, for the guest call.
func WithCall(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the Call in ctx, or nil.
func CallFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// spec returns the MachineSpec the call is about.
func (c *Call) spec() *clusterv1alpha1.MachineSpec {
	if c.Spec != nil {
		return c.Spec
	}
	if c.Machine != nil {
		return &c.Machine.Spec
	}
	return nil
}

// Input returns an input part, encoding it on first use. Parts are cached
// for the call: a guest that asks twice pays once.
func (c *Call) Input(part abi.Input) ([]byte, error) {
	if part < abi.InputMachine || part > abi.InputMachineList {
		return nil, errorf(abi.ErrnoInvalid, "unknown input part %d", int32(part))
	}
	if !offered(c.Method, part) {
		return nil, errorf(abi.ErrnoUnavailable, "input %s is not available in %s", part, c.Method)
	}
	if b := c.inputs[part]; b != nil {
		return b, nil
	}
	b, err := c.encodeInput(part)
	if err != nil {
		return nil, err
	}
	c.inputs[part] = b
	return b, nil
}

func offered(m abi.Method, part abi.Input) bool {
	for _, p := range m.Inputs() {
		if p == part {
			return true
		}
	}
	return false
}

func (c *Call) encodeInput(part abi.Input) ([]byte, error) {
	switch part {
	case abi.InputMachine:
		if c.Machine == nil {
			return nil, errorf(abi.ErrnoUnavailable, "no machine in %s", c.Method)
		}
		return marshal(c.Machine)
	case abi.InputSpec:
		s := c.spec()
		if s == nil {
			return nil, errorf(abi.ErrnoUnavailable, "no machine spec in %s", c.Method)
		}
		return marshal(s)
	case abi.InputProviderSpec:
		// The raw bytes as stored: no re-encoding on the host.
		if s := c.spec(); s != nil && s.ProviderSpec.Value != nil && len(s.ProviderSpec.Value.Raw) > 0 {
			return s.ProviderSpec.Value.Raw, nil
		}
		return []byte("null"), nil
	case abi.InputUserdata:
		return []byte(c.Userdata), nil
	case abi.InputNewUID:
		return []byte(c.NewUID), nil
	case abi.InputLogLevel:
		return []byte(strconv.Itoa(int(c.minLogLevel()))), nil
	case abi.InputMachineList:
		if c.Machines == nil {
			return nil, errorf(abi.ErrnoUnavailable, "no machine list in %s", c.Method)
		}
		list := *c.Machines
		list.Kind, list.APIVersion = "MachineList", clusterv1alpha1.SchemeGroupVersion.String()
		return marshal(&list)
	}
	return nil, errorf(abi.ErrnoInvalid, "unknown input part %d", part)
}

func marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, errorf(abi.ErrnoFailed, "encoding input: %v", err)
	}
	return b, nil
}

// machineChanged drops cached inputs derived from the Machine after
// machine_update replaced it.
func (c *Call) machineChanged() {
	c.inputs[abi.InputMachine] = nil
	if c.Spec == nil {
		c.inputs[abi.InputSpec] = nil
		c.inputs[abi.InputProviderSpec] = nil
	}
}

// Error is a host function failure as the guest sees it: an errno and a
// message the guest can read with take_result.
type Error struct {
	Errno   abi.Errno
	Message string
}

func (e *Error) Error() string { return e.Errno.String() + ": " + e.Message }

func errorf(errno abi.Errno, format string, args ...any) *Error {
	return &Error{Errno: errno, Message: fmt.Sprintf(format, args...)}
}

// MaxRetryAfter is the longest retry hint the host passes on: a guest's
// retry_after_ms above it is clamped to it (it could otherwise overflow a
// time.Duration and come out as a hot loop of retries).
const MaxRetryAfter = time.Hour

// SetError records the guest's error report. A negative retry hint counts
// as none; one above MaxRetryAfter is clamped to it.
func (c *Call) SetError(reason, message string, retryAfterMillis int64) {
	// The message may be written into the Machine's status: its bound is
	// on the printable text, which may be longer than the guest's bytes.
	c.ErrSet, c.ErrReason, c.ErrMessage = true, reason, guesttext.ClipPrintable(message, int(c.Env.limits().MaxMessageBytes))
	c.RetryAfter = 0
	if retryAfterMillis > 0 {
		c.RetryAfter = MaxRetryAfter
		if retryAfterMillis < int64(MaxRetryAfter/time.Millisecond) {
			c.RetryAfter = time.Duration(retryAfterMillis) * time.Millisecond
		}
	}
}

// SetOutput records the guest's result document.
func (c *Call) SetOutput(b []byte) error {
	if err := c.checkOutputSize(int64(len(b))); err != nil {
		c.OutputRefused = abi.ErrnoTooLarge
		return err
	}
	c.Output = append(c.Output[:0], b...)
	c.OutputSet = true
	return nil
}

func (c *Call) checkOutputSize(n int64) error {
	if max := c.Env.limits().MaxResultBytes; n > max {
		return errorf(abi.ErrnoTooLarge, "output of %d bytes exceeds the limit of %d", n, max)
	}
	return nil
}

// minLogLevel is the lowest slog level the provider's logger records.
func (c *Call) minLogLevel() slog.Level {
	l := c.Env.logger()
	for _, lvl := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn} {
		if l.Enabled(c.ctx, lvl) {
			return lvl
		}
	}
	return slog.LevelError
}

// logger returns the call's logger: the provider's (which carries the
// provider attribute), with method and machine attributes.
func (c *Call) logger() *slog.Logger {
	if c.log == nil {
		method := slog.String("method", c.Method.String())
		if c.Data != nil && c.Data.Logger != nil {
			// The caller's logger (machine-controller's) already names
			// the Machine and the provider: adding them again would put
			// each field twice on every line.
			c.log = c.Data.Logger.With(method)
			return c.log
		}
		// The provider's logger already names the provider.
		attrs := []any{method}
		if c.Machine != nil {
			attrs = append(attrs, slog.String("machine", c.Machine.Namespace+"/"+c.Machine.Name))
		} else if s := c.spec(); s != nil && s.Name != "" {
			attrs = append(attrs, slog.String("machine", s.Name))
		}
		c.log = c.Env.logger().With(attrs...)
	}
	return c.log
}

// Logger returns the call's logger, for the runtime's own records.
func (c *Call) Logger() *slog.Logger { return c.logger() }
