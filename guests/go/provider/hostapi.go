package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/wasmprov/wasmprov/abi"
)

// MachineUpdate describes a change of the Machine; see abi.MachineUpdate.
type MachineUpdate = abi.MachineUpdate

// UpdateMachine asks the host to apply u to the Machine through
// machine-controller's MachineCreateDeleteData.Updater and returns the
// updated Machine. Available in Create and Delete; needs abi.CapMachineUpdate.
func UpdateMachine(ctx context.Context, u MachineUpdate) (*Machine, error) {
	req, err := json.Marshal(u)
	if err != nil {
		return nil, err
	}
	b, err := HostCall(ctx, abi.ImportMachineUpdate, req)
	if err != nil {
		return nil, err
	}
	m := new(Machine)
	if err := decodeMachine(b, m); err != nil {
		return nil, fmt.Errorf("decoding updated machine: %w", err)
	}
	return m, nil
}

// AddFinalizer is UpdateMachine adding one finalizer.
func AddFinalizer(ctx context.Context, name string) (*Machine, error) {
	return UpdateMachine(ctx, MachineUpdate{AddFinalizers: []string{name}})
}

// RemoveFinalizer is UpdateMachine removing one finalizer.
func RemoveFinalizer(ctx context.Context, name string) (*Machine, error) {
	return UpdateMachine(ctx, MachineUpdate{RemoveFinalizers: []string{name}})
}

// SetAnnotation is UpdateMachine setting one annotation.
func SetAnnotation(ctx context.Context, key, value string) (*Machine, error) {
	return UpdateMachine(ctx, MachineUpdate{Annotations: map[string]*string{key: &value}})
}

// ListPersistentVolumes lists PersistentVolumes through the host's
// MachineCreateDeleteData.PVLister. selector uses the Kubernetes label
// selector syntax; empty selects all. Available in Create and Delete; needs
// abi.CapPVList.
func ListPersistentVolumes(ctx context.Context, selector string) ([]PersistentVolume, error) {
	req, err := json.Marshal(abi.PVListRequest{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	b, err := HostCall(ctx, abi.ImportPVList, req)
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []PersistentVolume `json:"items"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("decoding persistent volumes: %w", err)
	}
	return list.Items, nil
}

// ConfigVarString resolves a ConfigVarString as it appears in the provider
// spec (a bare string, or {value, secretKeyRef, configMapKeyRef}) through the
// host, like machine-controller's ConfigVarResolver: a Secret or ConfigMap
// the Machine's provider spec references (as the host received it, from an
// allowed namespace), then the value, then the host
// environment variable envFallback (if the host's policy allows it). Needs
// abi.CapConfigVar.
func ConfigVarString(ctx context.Context, v json.RawMessage, envFallback string) (string, error) {
	b, err := resolveConfigVar(ctx, abi.ConfigVarTypeString, v, envFallback)
	return string(b), err
}

// ConfigVarBool is ConfigVarString for a ConfigVarBool. An unset variable
// with no fallback resolves to false.
func ConfigVarBool(ctx context.Context, v json.RawMessage, envFallback string) (bool, error) {
	b, err := resolveConfigVar(ctx, abi.ConfigVarTypeBool, v, envFallback)
	if err != nil {
		return false, err
	}
	if len(b) == 0 {
		return false, nil
	}
	return strconv.ParseBool(string(b))
}

func resolveConfigVar(ctx context.Context, typ string, v json.RawMessage, envFallback string) ([]byte, error) {
	if len(v) == 0 {
		v = json.RawMessage("null")
	}
	req, err := json.Marshal(abi.ConfigVarRequest{Type: typ, Var: v, EnvFallback: envFallback})
	if err != nil {
		return nil, err
	}
	return HostCall(ctx, abi.ImportConfigVar, req)
}

// HostCall invokes a data host function (abi.ImportHTTP, ...) of the current
// call with a JSON request. Prefer the typed helpers; this exists for SDK
// packages such as hosthttp.
func HostCall(ctx context.Context, fn string, req []byte) ([]byte, error) {
	h, err := hostFrom(ctx)
	if err != nil {
		return nil, err
	}
	return h.Call(fn, req)
}

// Logger returns a logger whose records go to the host's slog logger, which
// adds the provider, method and machine. Pass the method's context.
func Logger(ctx context.Context) *slog.Logger {
	h, err := hostFrom(ctx)
	if err != nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(&logHandler{host: h, min: hostLogLevel(h)})
}

// hostLogLevel asks the host for its lowest recorded level, so that records
// it would drop are never built: in a guest, building a slog record (caller
// PCs, time, attributes) costs tens of microseconds.
func hostLogLevel(h Host) slog.Level {
	b, err := h.Input(abi.InputLogLevel)
	if err != nil {
		return slog.LevelDebug // an older host: send everything
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return slog.LevelDebug
	}
	return slog.Level(n)
}

// logHandler is a slog.Handler over the host's log function. Attributes
// travel as one flat JSON object; groups prefix keys ("group.key"), which is
// how the host's handlers show them anyway.
type logHandler struct {
	host   Host
	min    slog.Level
	attrs  map[string]any
	prefix string
}

func (l *logHandler) Enabled(_ context.Context, level slog.Level) bool { return level >= l.min }

func (l *logHandler) Handle(_ context.Context, r slog.Record) error {
	obj := make(map[string]any, len(l.attrs)+r.NumAttrs())
	for k, v := range l.attrs {
		obj[k] = v
	}
	r.Attrs(func(a slog.Attr) bool {
		addAttr(obj, l.prefix, a)
		return true
	})
	var b []byte
	if len(obj) > 0 {
		b, _ = json.Marshal(obj)
	}
	l.host.Log(int32(r.Level), r.Message, b)
	return nil
}

func (l *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *l
	n.attrs = make(map[string]any, len(l.attrs)+len(as))
	for k, v := range l.attrs {
		n.attrs[k] = v
	}
	for _, a := range as {
		addAttr(n.attrs, l.prefix, a)
	}
	return &n
}

func (l *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return l
	}
	n := *l
	n.prefix = l.prefix + name + "."
	return &n
}

func addAttr(obj map[string]any, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	switch {
	case v.Kind() == slog.KindGroup:
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range v.Group() {
			addAttr(obj, p, g)
		}
	case a.Key == "":
		return
	default:
		if err, ok := v.Any().(error); ok {
			obj[prefix+a.Key] = err.Error()
			return
		}
		obj[prefix+a.Key] = v.Any()
	}
}

// HTTPRequest and HTTPResponse are the request and the answer of the
// host's HTTP functions, http_do and http_do_bin.
type (
	HTTPRequest  = abi.HTTPRequest
	HTTPResponse = abi.HTTPResponse
)

// BinaryHTTPHost is implemented by a Host that serves http_do_bin, the
// binary framing of http_do (SPEC §6.3). DoHTTP and package hosthttp send
// through it when BinaryHTTP returns true, and through http_do's JSON
// otherwise — which is what a Host written before http_do_bin existed,
// such as a test's fake, understands. The wasm host of this SDK always
// does: the module imports http_do_bin, so a host that lacks it refuses
// the module at load instead of failing its first request.
type BinaryHTTPHost interface {
	Host
	BinaryHTTP() bool
}

// DoHTTP sends one request through the host's HTTP function, subject to
// the host's policy. It is the light alternative to package hosthttp: it
// does not link net/http, which keeps a module several megabytes smaller
// and faster to compile. Needs abi.CapHTTP.
//
// The request and the answer cross in http_do_bin's binary frames when the
// host offers it (BinaryHTTPHost), else as http_do's JSON; the result is
// the same. The response's Body may share memory with the host's result:
// it is the caller's, to keep or modify.
func DoHTTP(ctx context.Context, req HTTPRequest) (*HTTPResponse, error) {
	h, err := hostFrom(ctx)
	if err != nil {
		return nil, err
	}
	if bh, ok := h.(BinaryHTTPHost); ok && bh.BinaryHTTP() {
		frame := abi.AppendHTTPRequestFrame(make([]byte, 0, abi.HTTPRequestFrameSize(&req)), &req)
		out, err := h.Call(abi.ImportHTTPBin, frame)
		if err != nil {
			return nil, err
		}
		resp, err := abi.ParseHTTPResponseFrame(out)
		if err != nil {
			return nil, fmt.Errorf("decoding host http response: %w", err)
		}
		return resp, nil
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	out, err := h.Call(abi.ImportHTTP, b)
	if err != nil {
		return nil, err
	}
	resp := new(HTTPResponse)
	if err := json.Unmarshal(out, resp); err != nil {
		return nil, fmt.Errorf("decoding host http response: %w", err)
	}
	return resp, nil
}
