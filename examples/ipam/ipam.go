// Package ipam is a worked example of a custom host function (package
// hostfuncs): an IP address allocator that lives in the embedder's
// process, which a sandboxed provider asks for its Machine's address.
//
// The guest never names the Machine it allocates for: the handler keys
// the lease by the Machine of the call the host is serving
// (hostfuncs.Request.Machine), so a provider can neither take another
// Machine's address nor release it. That is the pattern for any custom
// function: decide from what the host knows, take from the guest only
// what it may choose.
package ipam

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sync"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/hostfuncs"
)

// The import module and capability of the allocator's host functions.
const (
	Module     = "example_ipam_v1"
	Capability = "ipam.example.com/addresses"
)

// Response is the result document of allocate and lookup.
type Response struct {
	Address string `json:"address"`
}

// Allocator hands out the addresses of one prefix, one per Machine UID.
// It is safe for concurrent use.
type Allocator struct {
	prefix netip.Prefix

	mu     sync.Mutex
	next   netip.Addr
	leases map[string]netip.Addr
	free   []netip.Addr
}

// New returns an Allocator of prefix ("10.20.0.0/24"); the prefix's first
// address (the network's) is never handed out.
func New(prefix string) (*Allocator, error) {
	p, err := netip.ParsePrefix(prefix)
	if err != nil {
		return nil, fmt.Errorf("ipam: %w", err)
	}
	p = p.Masked()
	return &Allocator{prefix: p, next: p.Addr().Next(), leases: map[string]netip.Addr{}}, nil
}

// Leases returns a copy of the current leases, by Machine UID.
func (a *Allocator) Leases() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]string, len(a.leases))
	for uid, addr := range a.leases {
		out[uid] = addr.String()
	}
	return out
}

// HostFunctions are allocate, lookup and release, for
// runtime.WithHostFunctions. Each takes an empty request: the Machine is
// the call's.
func (a *Allocator) HostFunctions() []hostfuncs.Function {
	fn := func(name string, h func(uid string) ([]byte, error)) hostfuncs.Function {
		return hostfuncs.Function{
			Module: Module, Name: name, Capability: Capability,
			// A Create allocates once; a few more uses cover retries.
			MaxUsesPerCall:  8,
			MaxRequestBytes: 1 << 10,
			Handler: func(_ context.Context, req hostfuncs.Request) ([]byte, error) {
				if req.Machine.UID == "" {
					return nil, hostfuncs.Errorf(abi.ErrnoUnavailable, "%s needs a Machine: call it from Create, Get or Delete", name)
				}
				return h(req.Machine.UID)
			},
		}
	}
	return []hostfuncs.Function{
		fn("allocate", a.allocate),
		fn("lookup", a.lookup),
		fn("release", a.release),
	}
}

func (a *Allocator) allocate(uid string) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	addr, ok := a.leases[uid]
	switch {
	case ok:
		// Idempotent: a Create retried after a lost answer gets the same address.
	case len(a.free) > 0:
		addr, a.free = a.free[0], a.free[1:]
	case a.prefix.Contains(a.next):
		addr, a.next = a.next, a.next.Next()
	default:
		return nil, hostfuncs.Errorf(abi.ErrnoFailed, "prefix %s is exhausted", a.prefix)
	}
	a.leases[uid] = addr
	return json.Marshal(Response{Address: addr.String()})
}

func (a *Allocator) lookup(uid string) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	addr, ok := a.leases[uid]
	if !ok {
		return nil, hostfuncs.Errorf(abi.ErrnoNotFound, "no address is allocated to this Machine")
	}
	return json.Marshal(Response{Address: addr.String()})
}

func (a *Allocator) release(uid string) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if addr, ok := a.leases[uid]; ok {
		delete(a.leases, uid)
		a.free = append(a.free, addr)
	}
	return nil, nil
}
