package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"

	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/cloud/instance"
	"github.com/wasmprov/wasmprov/runtime"
)

// The checks of the faults profile: a transport fault injected into one
// request of a call at a time, as a real cloud's network and API produce
// them. A provider may fail the call, but cleanly (no trap, no forged
// result), must never turn a fault into "there is no instance", and must
// leave the cloud as the controller's retries expect it.

// faultKind is one way a request goes wrong.
type faultKind string

const (
	// faultReset: the connection is reset before the request reaches the
	// cloud.
	faultReset faultKind = "connection reset before the request was sent"
	// faultLost: the cloud handles the request, then the connection is
	// reset and the response is lost (a Create whose instance exists
	// though the provider saw an error).
	faultLost faultKind = "connection reset after the cloud handled the request (response lost)"
	// faultUnavailable: the cloud answers 503 without handling it.
	faultUnavailable faultKind = "503 Service Unavailable"
	// faultSlow: the response is held until shortly before the call's
	// deadline, then delivered.
	faultSlow faultKind = "response held until shortly before the call's deadline"
)

var faultKinds = []faultKind{faultReset, faultLost, faultUnavailable, faultSlow}

// maxFaultAt bounds the request index a fault is injected at: a call
// that makes more requests has its first maxFaultAt tried.
const maxFaultAt = 8

// slowCallTimeout is the deadline of a call whose request is held
// (faultSlow), and slowMargin how long before it the response comes.
const (
	slowCallTimeout = 2 * time.Second
	slowMargin      = time.Second
)

// faultPlan injects kind into the at-th request (from 1) of one call.
type faultPlan struct {
	kind faultKind
	at   int32
	seen atomic.Int32
}

// hit reports whether the call made the at-th request, so the fault was
// injected.
func (p *faultPlan) hit() bool { return p.seen.Load() >= p.at }

func (p *faultPlan) String() string {
	return fmt.Sprintf("request #%d met a fault: %s", p.at, p.kind)
}

type faultKey struct{}

func withFault(ctx context.Context, p *faultPlan) context.Context {
	return context.WithValue(ctx, faultKey{}, p)
}

// faultTransport injects the plan in a request's context, if any, and
// sends everything else to base.
type faultTransport struct{ base http.RoundTripper }

func (f faultTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p, _ := req.Context().Value(faultKey{}).(*faultPlan)
	if p == nil || p.seen.Add(1) != p.at {
		return f.base.RoundTrip(req)
	}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	switch p.kind {
	case faultReset:
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, reset
	case faultLost:
		resp, err := f.base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, reset
	case faultUnavailable:
		if req.Body != nil {
			req.Body.Close()
		}
		body := `{"id":"service_unavailable","message":"injected by the wasmprov conformance suite"}`
		return &http.Response{
			Status: "503 Service Unavailable", StatusCode: http.StatusServiceUnavailable,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:        http.Header{"Content-Type": {"application/json"}, "Retry-After": {"1"}},
			Body:          io.NopCloser(bytes.NewReader([]byte(body))),
			ContentLength: int64(len(body)), Request: req,
		}, nil
	default: // faultSlow
		hold := time.Until(deadlineOf(req.Context()).Add(-slowMargin))
		timer := time.NewTimer(hold)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		return f.base.RoundTrip(req)
	}
}

func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(slowCallTimeout)
}

// faultCall returns a context for one call for m with plan injected. A
// held response (faultSlow) gets its shorter deadline.
func (t *T) faultCall(m *clusterv1alpha1.Machine, p *faultPlan) (context.Context, context.CancelFunc) {
	ctx, cancel := t.callFor(m)
	ctx = withFault(ctx, p)
	if p.kind != faultSlow {
		return ctx, cancel
	}
	short, cancelShort := context.WithTimeout(ctx, slowCallTimeout)
	return short, func() { cancelShort(); cancel() }
}

// eachFault runs f for every fault kind at every request index of a call,
// until the call makes fewer requests than the index (f reports whether
// its plan was hit). n numbers the Machines f may use.
//
// A provider that makes no HTTP request in the calls (its state lives on
// the Machine, as the fakes' does) has nothing to inject into: the check
// is skipped and says so.
func eachFault(f func(p *faultPlan, n int) (hit bool, err error)) error {
	var errs []error
	n, injected := 0, 0
	for _, kind := range faultKinds {
		for at := int32(1); at <= maxFaultAt; at++ {
			hit, err := f(&faultPlan{kind: kind, at: at}, n)
			n++
			if err != nil {
				errs = append(errs, err)
			}
			if !hit {
				break
			}
			injected++
		}
	}
	if injected == 0 && len(errs) == 0 {
		return skipError{"the provider made no HTTP request in these calls: there was no request to inject a fault into"}
	}
	if len(errs) > 0 {
		return failf("%s", errors.Join(errs...).Error())
	}
	return nil
}

// cleanFailure judges a faulted call's error: a trap, a forged result or
// running past the deadline is never acceptable.
func cleanFailure(what string, p *faultPlan, err error) error {
	if err != nil && sandboxFailure(err) {
		if runtime.ErrorClass(err) == runtime.ClassTrap {
			return failf("%s trapped when %s: %s (a transport error reaches the provider as an error with no response: "+
				"check it before reading the response)", what, p, describe(err))
		}
		return failf("%s failed in the sandbox when %s: %s", what, p, describe(err))
	}
	return nil
}

func checkFaultsCreate(t *T) error {
	return eachFault(func(p *faultPlan, n int) (bool, error) {
		m := t.machine(n)
		cur := t.current(m)
		t.store.touch(m)
		t.env.journal.record(t.id, cur)
		ctx, cancel := t.faultCall(m, p)
		inst, err := t.env.p.Create(ctx, cur.DeepCopy(), createData(t.store), userdata)
		cancel()
		t.env.journal.record(t.id, t.current(m))
		t.cleanupAfter(m, "")
		if !p.hit() {
			return false, nil
		}
		if err := cleanFailure("Create", p, err); err != nil {
			return true, err
		}
		if err == nil && inst == nil {
			return true, failf("Create returned no instance and no error when %s", p)
		}
		// The controller calls Create again, until it succeeds.
		created, sent, err := t.create(m)
		if err != nil {
			return true, failf("after a Create whose %s, the next Create failed: %s\nCreate received: %s", p, describe(err), describeMachine(sent))
		}
		got, recv, err := t.get(m)
		if err != nil || got.ID() != created.ID() {
			return true, failf("after a Create whose %s and one that succeeded with ID %q, Get returned %s, %s\nGet received: %s",
				p, created.ID(), describeInstance(got), describe(err), describeMachine(recv))
		}
		if !t.env.stateful {
			return true, nil
		}
		if err := t.deleteAll(m); err != nil {
			return true, failf("Delete after a faulted Create failed: %s", describe(err))
		}
		if left, recv, err := t.get(m); err == nil && left.Status() != instance.StatusDeleted {
			return true, failf("after a Create whose %s, a second Create and Delete, Get still finds %s: "+
				"the faulted Create left an instance the retry did not find, which nothing will ever delete\nGet received: %s",
				p, describeInstance(left), describeMachine(recv))
		}
		return true, nil
	})
}

func checkFaultsGet(t *T) error {
	m := t.machine(0)
	created, sent, err := t.create(m)
	if err != nil {
		return failf("Create failed: %s\nCreate received: %s", describe(err), describeMachine(sent))
	}
	return eachFault(func(p *faultPlan, _ int) (bool, error) {
		cur := t.current(m)
		ctx, cancel := t.faultCall(m, p)
		got, err := t.env.p.Get(ctx, cur.DeepCopy(), nil)
		cancel()
		if !p.hit() {
			return false, nil
		}
		if err := cleanFailure("Get", p, err); err != nil {
			return true, err
		}
		switch {
		case isNotFound(err):
			return true, failf("Get reported instance-not-found when %s, though the instance exists: "+
				"machine-controller creates a second instance for a Machine whose Get says not-found; a fault must be a plain (retried) error", p)
		case err == nil && (got == nil || got.ID() != created.ID()):
			return true, failf("Get returned %s when %s; Create had returned ID %q", describeInstance(got), p, created.ID())
		}
		return true, nil
	})
}

func checkFaultsDelete(t *T) error {
	return eachFault(func(p *faultPlan, n int) (bool, error) {
		m := t.machine(n)
		if _, sent, err := t.create(m); err != nil {
			return true, failf("Create failed: %s\nCreate received: %s", describe(err), describeMachine(sent))
		}
		cur := t.current(m)
		t.store.touch(m)
		ctx, cancel := t.faultCall(m, p)
		err := t.env.p.Delete(ctx, cur, createData(t.store))
		cancel()
		hit := p.hit()
		if err := cleanFailure("Delete", p, err); err != nil {
			return hit, err
		}
		if err == nil && hit && t.env.stateful {
			if left, recv, gerr := t.get(m); gerr == nil && left.Status() != instance.StatusDeleted {
				return hit, failf("Delete reported success when %s, but Get still finds %s: machine-controller removes the "+
					"finalizer on success and the instance leaks\nGet received: %s", p, describeInstance(left), describeMachine(recv))
			}
		}
		if err := t.deleteAll(m); err != nil {
			return hit, failf("after a Delete whose %s, deleting failed: %s", p, describe(err))
		}
		return hit, nil
	})
}
