// Package hostfuncs is the runtime's extension point: host functions an
// embedder gives its providers beside the built-in wasmprov_v1 ones (an
// IP allocation, a DNS record, a look-up in the embedder's inventory).
//
// A Function is declared as a value and handed to the runtime once
// (runtime.WithHostFunctions). A guest imports it under the Function's own
// module name, with the framing of the built-in data functions: a request
// document in, a result or an errno out (abi/SPEC.md §6.5). The host applies
// to it everything it applies to a built-in, and a Function cannot opt out:
// the module is refused at load unless its policy grants the Function's
// Capability; every pointer is checked; the request counts against the
// call's byte budget; uses are capped per call; the Handler runs under the
// call's deadline and the guest gets its answer when that deadline passes,
// whether or not the Handler has returned.
//
// The package is engine-free and imports only the ABI, so an embedder's
// package of host functions pulls in nothing else.
package hostfuncs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/wasmprov/wasmprov/abi"
)

// Function is a host function a provider may import as
//
//	(import "<Module>" "<Name>" (func (param $req i32) (param $req_len i32)
//	  (param $buf i32) (param $limit i32) (result i64)))
//
// It is immutable once handed to the runtime.
type Function struct {
	// Module and Name are the import's module and name: lower-case ASCII
	// letters, digits and '_', at most 64 bytes each, the module starting
	// with a letter. A module name the host serves itself (wasmprov_*,
	// wasi_*, env) is refused. Version the module in its name
	// (example_ipam_v1), as the ABI versions wasmprov_v1: a guest imports
	// a signature, and a changed one is a new module.
	Module, Name string
	// Capability is what the policy must grant for a module importing the
	// function to load: a domain-qualified name, "ipam.example.com/allocate".
	// A policy that lists no capabilities grants every built-in one a module
	// declares and no custom one: the host cannot know what an embedder's
	// function reaches, so it is granted by name or not at all. Several
	// functions may share a capability.
	Capability string
	// MaxUsesPerCall caps how often one provider call may use the function;
	// past it the guest gets TOO_LARGE and the host warns once per call.
	// 0 means DefaultMaxUsesPerCall.
	MaxUsesPerCall int
	// MaxRequestBytes caps a request document; longer ones are TOO_LARGE
	// before the Handler runs. 0 means the policy's limit for every data
	// host function (8 MiB by default), which is also the most it may be.
	MaxRequestBytes int
	// MaxResultBytes caps what the Handler may return; a longer result is
	// TOO_LARGE to the guest and an error in the host's log. 0 means
	// DefaultMaxResultBytes.
	MaxResultBytes int
	// Handler serves one use of the function.
	Handler Handler
}

// Handler serves one use of a Function. ctx is cancelled at the call's
// deadline (or when the caller gives up): a Handler that blocks must watch
// it, because the guest gets FAILED at the deadline and the host does not
// wait for the Handler any longer. The result is handed to the guest as is;
// an error is answered as Error's errno and message, any other error as
// FAILED with its text. The guest reads that text: keep out of it what the
// guest must not see. Handlers of different calls run concurrently.
type Handler func(ctx context.Context, req Request) ([]byte, error)

// Request is one use of a Function by a guest.
type Request struct {
	// Provider is the provider's name, as loaded.
	Provider string
	// Method is the provider method the guest is serving: "Create",
	// "Delete", ... (abi.Method's names).
	Method string
	// Machine is the Machine the call is about; empty for the methods that
	// take a spec or a list instead.
	Machine MachineRef
	// Body is the guest's request document, copied out of its memory: the
	// Handler owns it.
	Body []byte
}

// MachineRef names a Machine.
type MachineRef struct {
	Namespace, Name, UID string
}

// Error is a Handler's failure with the errno the guest should get.
type Error struct {
	Errno   abi.Errno
	Message string
}

func (e *Error) Error() string { return e.Errno.String() + ": " + e.Message }

// Errorf returns an *Error with errno and a formatted message. The errnos
// a Handler may choose are DENIED, INVALID, FAILED, UNAVAILABLE, TOO_LARGE
// and NOT_FOUND (abi/SPEC.md §5); NOT_DECLARED is the host's, and a Handler
// answering it is answered as FAILED.
func Errorf(errno abi.Errno, format string, args ...any) *Error {
	return &Error{Errno: errno, Message: fmt.Sprintf(format, args...)}
}

// Defaults for the zero fields of Function.
const (
	DefaultMaxUsesPerCall = 64
	DefaultMaxResultBytes = 1 << 20
)

// maxNameBytes bounds Module and Name: they appear in every log line and
// error about the function.
const maxNameBytes = 64

// Validate reports what is wrong with f, naming the field to fix.
func (f Function) Validate() error {
	var errs []error
	if err := checkName("Module", f.Module); err != nil {
		errs = append(errs, err)
	} else if c := f.Module[0]; c < 'a' || c > 'z' {
		errs = append(errs, fmt.Errorf("Module %q must start with a letter", f.Module))
	} else if f.Module == "env" || strings.HasPrefix(f.Module, "wasmprov") || strings.HasPrefix(f.Module, "wasi") {
		errs = append(errs, fmt.Errorf("Module %q is reserved (the host serves wasmprov*, wasi* and env itself): name it after your project, e.g. example_ipam_v1", f.Module))
	}
	if err := checkName("Name", f.Name); err != nil {
		errs = append(errs, err)
	}
	if err := CheckCapabilityName(f.Capability); err != nil {
		errs = append(errs, err)
	}
	if f.MaxUsesPerCall < 0 || f.MaxRequestBytes < 0 || f.MaxResultBytes < 0 {
		errs = append(errs, errors.New("MaxUsesPerCall, MaxRequestBytes and MaxResultBytes must not be negative (0 takes the default)"))
	}
	if f.Handler == nil {
		errs = append(errs, errors.New("Handler is nil"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("host function %s.%s: %w", f.Module, f.Name, errors.Join(errs...))
	}
	return nil
}

func checkName(field, s string) error {
	if s == "" || len(s) > maxNameBytes {
		return fmt.Errorf("%s %q must be 1 to %d bytes", field, s, maxNameBytes)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return fmt.Errorf("%s %q: only lower-case ASCII letters, digits and '_' are allowed", field, s)
		}
	}
	return nil
}

// CheckCapabilityName reports whether name is a custom capability's name:
// a DNS domain (at least one dot), '/', and a name of lower-case letters,
// digits, '-', '_' and '.': "ipam.example.com/allocate". The built-in
// capabilities ("http", "config_var", ...) have no '/', so the two never
// collide.
func CheckCapabilityName(name string) error {
	domain, rest, ok := strings.Cut(name, "/")
	valid := ok && len(name) <= 253 && strings.Contains(domain, ".") && rest != "" &&
		!strings.HasPrefix(domain, ".") && !strings.HasSuffix(domain, ".") && !strings.Contains(domain, "..")
	for _, part := range []string{domain, rest} {
		for i := 0; valid && i < len(part); i++ {
			c := part[i]
			valid = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || (c == '_' && part == rest)
		}
	}
	if !valid {
		return fmt.Errorf("Capability %q must be a domain-qualified name such as \"ipam.example.com/allocate\" (lower-case; a domain with a dot, '/', a name)", name)
	}
	return nil
}
