package runtime

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/internal/guesttext"
	"github.com/wasmprov/wasmprov/internal/hostmodule"

	corev1 "k8s.io/api/core/v1"
)

// The result documents of the methods (abi/SPEC.md §4.1), as an error
// names them to the guest's author: what was expected, with an example.
const (
	docInstance      = `an Instance document, a JSON object such as {"id":"42","status":"running"} (SPEC §8.1)`
	docMachineSpec   = `a MachineSpec, the JSON object of the whole defaulted spec (SPEC §4.1)`
	docCloudConfig   = `a JSON object {"config": string, "name": string} (SPEC §4.1)`
	docLabels        = `a JSON object of string to string such as {"size":"cx22"} (SPEC §4.1)`
	docMetricSamples = `a JSON object {"metrics": [{"name", "type": "gauge"|"counter", "labels", "value", "help"}]} (SPEC §4.3)`
)

// refusedOutput is the error of a method whose output is optional when
// the guest returned OK after the host refused its only output: that is
// not "no output" (unchanged, empty), which would silently drop what the
// guest meant to return.
func (p *Provider) refusedOutput(call *hostmodule.Call) error {
	if e := call.OutputRefused; e != 0 && !call.OutputSet {
		return p.badResult(call.Method, "%s returned status OK, but the host refused its `output` with %s (%d) (SPEC §4.1, §6.1)", call.Method, errnoName(e), int32(e))
	}
	return nil
}

// decodeOutput decodes the guest's result document into v. The error
// says, in the terms of the SPEC, which method returned what instead of
// doc — an author reads "Get returned status OK with an output that is
// not an Instance document", not a JSON decoder's "invalid character".
func (p *Provider) decodeOutput(call *hostmodule.Call, v any, doc string) error {
	if err := json.Unmarshal(call.Output, v); err != nil {
		return p.badResult(call.Method, "%s returned status OK with an output that is not %s: got %s (%v)",
			call.Method, doc, quoteOutput(call.Output), err)
	}
	return nil
}

// errnoName is e as the SPEC writes it (TOO_LARGE, not too-large).
func errnoName(e abi.Errno) string {
	return strings.ToUpper(strings.ReplaceAll(e.String(), "-", "_"))
}

// quoteOutput shows the start of a guest's output in an error message.
func quoteOutput(b []byte) string {
	const max = 64
	s := guesttext.PrintableLine(string(b[:min(len(b), max)]))
	if len(b) > max {
		s += "…"
	}
	return "`" + s + "`"
}

// decodeInstance turns the output of Get or Create into an Instance: one
// is required, and it must satisfy abi/SPEC.md §8.1.
func (p *Provider) decodeInstance(call *hostmodule.Call) (instance.Instance, error) {
	m := call.Method
	if len(call.Output) == 0 {
		// Get and Create have no "unchanged" or "empty" result: with no
		// instance the answer is NOT_FOUND (or an error), not silence.
		if err := p.refusedOutput(call); err != nil {
			return nil, err
		}
		if !call.OutputSet {
			return nil, p.badResult(m, "%s returned status OK without calling `output`: an Instance document is required (SPEC §4.1); with no instance, return NOT_FOUND (3)", m)
		}
		return nil, p.badResult(m, "%s returned status OK but called `output` with nothing: an Instance document is required (SPEC §4.1)", m)
	}
	var wire abi.Instance
	if err := p.decodeOutput(call, &wire, docInstance); err != nil {
		return nil, err
	}
	if err := checkInstanceSizes(&wire); err != nil {
		return nil, p.badResult(m, "%s returned an Instance with %v (SPEC §8.1)", m, err)
	}
	// What the guest names reaches logs, events and the Machine: no
	// control characters (terminal escapes), whatever the guest echoes.
	inst := &instance.Static{
		InstanceName:       guesttext.PrintableLine(wire.Name),
		InstanceID:         guesttext.PrintableLine(wire.ID),
		InstanceProviderID: guesttext.PrintableLine(wire.ProviderID),
		InstanceStatus:     instance.Status(wire.Status),
	}
	switch inst.InstanceStatus {
	case "":
		return nil, p.badResult(m, "%s returned an Instance without \"status\": want one of running, deleting, deleted, creating, unknown (SPEC §8.1)", m)
	case instance.StatusRunning, instance.StatusDeleting, instance.StatusDeleted, instance.StatusCreating, instance.StatusUnknown:
	default:
		return nil, p.badResult(m, "%s returned an Instance with unknown status %q: want one of running, deleting, deleted, creating, unknown (SPEC §8.1)", m, truncate(wire.Status, 64))
	}
	if inst.InstanceStatus == instance.StatusRunning && wire.ID == "" {
		// The controller identifies a running instance by its ID (events,
		// the node's provider ID, later calls): an empty one is a bug in
		// the guest, not an instance.
		return nil, p.badResult(m, "%s returned an Instance with status \"running\" and an empty \"id\": a running instance must carry the cloud's ID of it (SPEC §8.1)", m)
	}
	if len(wire.Addresses) > 0 {
		inst.InstanceAddresses = make(map[string]corev1.NodeAddressType, len(wire.Addresses))
		for addr, t := range wire.Addresses {
			switch at := corev1.NodeAddressType(t); at {
			case corev1.NodeHostName, corev1.NodeExternalIP, corev1.NodeInternalIP, corev1.NodeExternalDNS, corev1.NodeInternalDNS:
				inst.InstanceAddresses[guesttext.PrintableLine(addr)] = at
			default:
				return nil, p.badResult(m, "address %q has type %q, which is not a Kubernetes NodeAddressType (SPEC §8.1)", truncate(addr, 64), truncate(t, 64))
			}
		}
	}
	return inst, nil
}

// Bounds of an Instance (abi/SPEC.md §8.1): its provider ID and addresses
// are written into the Machine (spec.providerID, status.addresses) and
// its name and ID into logs and Events, so none may be as large as the
// result document. A longer one is a bad result, not cut: a cut ID names
// another instance.
const (
	MaxInstanceFieldBytes = 1024 // name, id, providerID
	MaxInstanceAddresses  = 64
	MaxAddressBytes       = 256 // a DNS name is at most 253
)

func checkInstanceSizes(in *abi.Instance) error {
	for _, f := range []struct{ name, v string }{{"name", in.Name}, {"id", in.ID}, {"providerID", in.ProviderID}} {
		if len(f.v) > MaxInstanceFieldBytes {
			return fmt.Errorf("a %q of %d bytes, more than %d", f.name, len(f.v), MaxInstanceFieldBytes)
		}
	}
	if len(in.Addresses) > MaxInstanceAddresses {
		return fmt.Errorf("%d addresses, more than %d", len(in.Addresses), MaxInstanceAddresses)
	}
	for a := range in.Addresses {
		if len(a) > MaxAddressBytes {
			return fmt.Errorf("an address of %d bytes, more than %d", len(a), MaxAddressBytes)
		}
	}
	return nil
}

// Bounds of MachineMetricsLabels (abi/SPEC.md §4.1): the labels become
// Prometheus label values of one series per distinct set, so a guest
// returning thousands, or huge ones, would blow up the controller's
// metrics.
const (
	MaxMetricsLabels          = 32
	MaxMetricsLabelNameBytes  = 63
	MaxMetricsLabelValueBytes = 256
)

func checkMetricsLabels(labels map[string]string) error {
	if len(labels) > MaxMetricsLabels {
		return fmt.Errorf("%d labels, more than %d", len(labels), MaxMetricsLabels)
	}
	for k, v := range labels {
		switch {
		case k == "" || len(k) > MaxMetricsLabelNameBytes || strings.ContainsFunc(k, unicode.IsControl):
			return fmt.Errorf("label name %q is empty, longer than %d bytes or holds control characters", truncate(k, 64), MaxMetricsLabelNameBytes)
		case len(v) > MaxMetricsLabelValueBytes:
			return fmt.Errorf("label %q has a value longer than %d bytes", truncate(k, 64), MaxMetricsLabelValueBytes)
		}
	}
	return nil
}

func (p *Provider) badResult(m abi.Method, format string, args ...any) error {
	return &CallError{Provider: p.name, Method: m, Class: ClassBadResult,
		Err: fmt.Errorf("%w: %s", ErrBadResult, fmt.Sprintf(format, args...))}
}
