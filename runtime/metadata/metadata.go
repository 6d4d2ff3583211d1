// Package metadata reads and writes a provider module's self-description:
// a custom section named "wasmprov.metadata" holding a JSON object (name,
// version, description, source, license, the ABI version it was built for,
// the oldest host it runs on, the capabilities it uses and the policy its
// author suggests).
//
// A custom section changes nothing about how a module runs — engines skip
// it — so metadata can be added after the build (`wasmprov annotate`) and
// read without compiling anything: an installer, `wasmprov inspect` and the
// OCI packaging read it statically, and the host refuses, before compiling,
// a module whose metadata says it needs a newer host or another ABI.
//
// It lives under runtime/ so that it decodes the binary format with the
// host's own decoder (runtime/internal/wasmbin), not a second one.
package metadata

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/hostfuncs"
	"github.com/wasmprov/wasmprov/runtime/internal/wasmbin"
)

// SectionName is the name of the custom section that holds the metadata.
const SectionName = "wasmprov.metadata"

// ErrInvalid: the module's metadata section is there but is not usable
// metadata (not JSON, two of them, a malformed version).
var ErrInvalid = errors.New("invalid wasmprov.metadata section")

// ErrIncompatible: the metadata is well-formed but says this host cannot
// run the module (another ABI version, a newer minimum host version).
var ErrIncompatible = errors.New("module metadata is incompatible with this host")

// Metadata is the section's JSON object. Unknown fields are ignored when
// reading, so that a module annotated by a newer tool still loads on an
// older host; the fields that decide whether it may load are checked.
type Metadata struct {
	Name        string `json:"name"`
	Version     string `json:"version,omitempty"`
	Description string `json:"description,omitempty"`
	// Source is where the provider's source lives (a URL).
	Source  string `json:"source,omitempty"`
	License string `json:"license,omitempty"` // an SPDX expression
	// ABIVersion is the Provider ABI version the module was built for; 0
	// means not stated. A stated version must be the host's abi.Version.
	ABIVersion int `json:"abiVersion,omitempty"`
	// MinHostVersion is the oldest wasmprov host (a semantic version,
	// "1.2.0" or "v1.2.0") the module runs on.
	MinHostVersion string `json:"minHostVersion,omitempty"`
	// Capabilities names what the module uses (abi capability names). It
	// is documentation for whoever writes the policy: what the host grants
	// is decided by the module's declaration and the policy, never by this.
	Capabilities []string `json:"capabilities,omitempty"`
	// Policy is what the author suggests granting; nothing applies it.
	Policy *SuggestedPolicy `json:"policy,omitempty"`
}

// SuggestedPolicy is the part of a runtime.Policy an author can know in
// advance.
type SuggestedPolicy struct {
	AllowedHosts []string `json:"allowedHosts,omitempty"`
	AllowedEnv   []string `json:"allowedEnv,omitempty"`
}

// Validate checks what a reader relies on: a name, a semantic
// MinHostVersion, known capability names.
func (m *Metadata) Validate() error {
	if strings.TrimSpace(m.Name) == "" {
		return fmt.Errorf("%w: no name", ErrInvalid)
	}
	if m.MinHostVersion != "" && !semver.IsValid(canonical(m.MinHostVersion)) {
		return fmt.Errorf("%w: minHostVersion %q is not a semantic version", ErrInvalid, m.MinHostVersion)
	}
	if m.ABIVersion < 0 {
		return fmt.Errorf("%w: abiVersion %d", ErrInvalid, m.ABIVersion)
	}
	for _, c := range m.Capabilities {
		if _, ok := abi.ParseCapability(c); !ok && hostfuncs.CheckCapabilityName(c) != nil {
			return fmt.Errorf("%w: unknown capability %q (neither built in nor a custom host function's domain-qualified name)", ErrInvalid, c)
		}
	}
	return nil
}

// CheckHost says whether a host of version hostVersion implementing ABI
// abiVersion may run the module: an error wrapping ErrIncompatible naming
// the reason if not.
func (m *Metadata) CheckHost(hostVersion string, abiVersion int) error {
	if m.ABIVersion != 0 && m.ABIVersion != abiVersion {
		return fmt.Errorf("%w: built for ABI version %d, the host implements %d", ErrIncompatible, m.ABIVersion, abiVersion)
	}
	if m.MinHostVersion != "" && semver.Compare(canonical(m.MinHostVersion), canonical(hostVersion)) > 0 {
		return fmt.Errorf("%w: needs host version %s or newer, this host is %s", ErrIncompatible, m.MinHostVersion, hostVersion)
	}
	return nil
}

// canonical accepts a version with or without the leading "v".
func canonical(v string) string {
	if strings.HasPrefix(v, "v") {
		return v
	}
	return "v" + v
}

// Read returns the module's metadata, nil (and no error) if it has none.
// It decodes only the section headers and that section: no compiler sees
// the module. A module that does not decode is an error wrapping
// wasmbin's ErrMalformed; a section that is not valid metadata, or a
// second one, wraps ErrInvalid.
func Read(wasm []byte) (*Metadata, error) {
	body, found, err := find(wasm)
	if err != nil || !found {
		return nil, err
	}
	return Parse(body)
}

// MaxBytes caps a metadata section. The host reads it before the load
// limits apply (to refuse a module for a newer host before compiling), so
// a hostile module must not make that read cost more than a glance; real
// metadata is a few hundred bytes.
const MaxBytes = 64 << 10

// Parse decodes a metadata section's payload and validates it.
func Parse(payload []byte) (*Metadata, error) {
	if len(payload) > MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrInvalid, len(payload), MaxBytes)
	}
	var m Metadata
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object: %v", ErrInvalid, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalid)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// find returns the payload of the module's only metadata section.
func find(wasm []byte) (payload []byte, found bool, err error) {
	it, err := wasmbin.NewSections(wasm)
	if err != nil {
		return nil, false, err
	}
	var s wasmbin.Section
	for {
		ok, err := it.Next(&s)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return payload, found, nil
		}
		if s.ID != wasmbin.SectionIDCustom {
			continue
		}
		name, r, err := s.CustomName()
		if err != nil {
			return nil, false, err
		}
		if string(name) != SectionName {
			continue
		}
		if found {
			return nil, false, fmt.Errorf("%w: a second %s section at offset %d", ErrInvalid, SectionName, s.Offset)
		}
		payload, found = r.Rest(), true
	}
}
