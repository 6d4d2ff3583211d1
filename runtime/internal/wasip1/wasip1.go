// Package wasip1 is wasmprov's implementation of WASI preview 1
// (wasi_snapshot_preview1), written once and bound by every engine, so a
// guest sees the same WASI on wazero and on wasmtime.
//
// It serves exactly wasmprov's sandbox (abi/SPEC.md §9): no arguments, the
// environment of the instance's configuration, stdin empty, stdout and
// stderr to the instance's writers, no preopened directories (so no
// filesystem), no sockets, clocks and randomness real only when granted.
// Within that configuration every function behaves as wazero v1.12.0's
// wasi_snapshot_preview1 does — the same errno for every edge, the same
// memory effects in the same order, the same fakes — except where wazero's
// own code panics (a trap) on hostile input; those cases and the other
// deliberate differences are listed in DIFFERENCES below and in the
// package's differential test.
//
// The functions are a table (Functions) in the style of hostmodule.Function:
// Go functions over a hostmodule.Memory and a uint64 stack, given the
// per-instance State. An engine binds each entry as an import of module
// ModuleName and, before running it, checks State.Interrupted: once the
// host interrupted an instance, every host call on it ends the call.
//
// Two panics end a call from inside a function, and engines turn them into
// the call's error: *engine.ExitError (proc_exit) and ErrInterrupted (the
// instance was interrupted while a function was sleeping or working through
// a large request, or the call's context ended while it slept). A function
// that can take long — poll_oneoff's sleep, fd_write over many iovecs,
// random_get of a large buffer, a path of many megabytes — checks for an
// interrupt as it goes, so an interrupt takes effect within about a
// millisecond of work.
//
// # DIFFERENCES from wazero v1.12.0
//
//   - poll_oneoff sleeps (clock granted) until the earliest relative clock
//     timeout, as wazero does, but wakes up at once when the instance is
//     interrupted or the call's context ends, and then ends the call;
//     wazero's time.Sleep ignores both, so a one-hour sleep outlived any
//     deadline.
//   - poll_oneoff whose nsubscriptions*48 or nsubscriptions*32 overflows 32
//     bits: wazero computes the buffer sizes in 32 bits and then indexes
//     past them (a Go panic, which wazero reports as a trap); here the same
//     computation runs, with the same memory effects, and where wazero would
//     index out of range the call returns EFAULT instead.
//   - fd_filestat_set_times on an open stdio descriptor with valid flags:
//     wazero dereferences a nil filesystem (a trap); here it returns ENOSYS,
//     the errno the descriptor's file gives.
//   - The real monotonic clock counts from the start of the host process
//     (wazero: from the host's boot); both are monotonic with 1 ns
//     resolution, and only differences are meaningful.
//   - A writer (the instance's stdout or stderr) that fails gives EIO;
//     wazero maps some os errors to other errnos. wasmprov's writers never
//     fail.
//   - sched_yield is a no-op in both (wazero's default osyield).
package wasip1

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
)

// ModuleName is the import module of WASI preview 1.
const ModuleName = "wasi_snapshot_preview1"

// Memory is the guest's linear memory (hostmodule.Memory). Views returned by
// Read are written through: a WASI function writes its results into them,
// as wazero's does.
type Memory = hostmodule.Memory

// Function is one WASI function: Fn reads its parameters from stack and
// writes its result (an errno) to stack[0], like hostmodule.Function, with
// the instance's State. Results is empty for proc_exit, which never
// returns.
type Function struct {
	Name            string
	Params, Results []hostmodule.ValueType
	Fn              func(ctx context.Context, s *State, mem Memory, stack []uint64)
}

// ErrInterrupted is the panic with which a WASI function ends a call it
// must not finish: the instance was interrupted (State.Interrupt) while the
// function slept or worked, or the call's context ended while it slept.
// Engines panic with it too when a host function is called on an
// interrupted instance, so every way an interrupt ends a call looks the
// same.
var ErrInterrupted = errors.New("guest call interrupted by the host")

// State is the WASI state of one instance. It is used by the goroutine
// running the instance, except Interrupt and Interrupted, which are safe
// from any goroutine.
type State struct {
	env     [][]byte // "KEY=value" without the NUL
	envSize uint32   // with a NUL per variable

	stdout, stderr io.Writer
	open           [3]bool // fds 0-2 (stdin, stdout, stderr) not yet closed

	clock    bool
	random   io.Reader
	fakeWall int64 // the last fake wall-clock reading (ns)
	fakeMono int64 // the last fake monotonic reading (ns)

	interrupted atomic.Bool
	wake        chan struct{} // closed by Interrupt
}

// The fake clocks of a guest without the clock capability are wazero's
// defaults, so a guest sees the same on every engine.
const (
	// fakeEpoch is the first fake wall-clock reading: 2022-01-01T00:00:00Z.
	fakeEpoch = 1640995200 * int64(time.Second)
	// fakeStep is how far each fake clock reading advances.
	fakeStep = int64(time.Millisecond)
	// Clock resolutions reported by clock_res_get (wazero's, real or fake).
	walltimeResolution = uint64(time.Microsecond)
	nanotimeResolution = uint64(1)
)

// monoBase anchors the real monotonic clock.
var monoBase = time.Now()

// New returns the WASI state of an instance configured by cfg: its
// environment, its writers (nil discards), and whether the real clock and
// randomness are granted. An environment entry with an empty name or a NUL
// is an error, as wazero refuses it.
func New(cfg engine.InstanceConfig) (*State, error) {
	s := &State{
		stdout: cfg.Stdout,
		stderr: cfg.Stderr,
		open:   [3]bool{true, true, true},
		clock:  cfg.Clock,
		// The first readings are the epoch and 0.
		fakeWall: fakeEpoch - fakeStep,
		fakeMono: -fakeStep,
		wake:     make(chan struct{}),
	}
	if s.stdout == nil {
		s.stdout = io.Discard
	}
	if s.stderr == nil {
		s.stderr = io.Discard
	}
	// Never a fixed stream: every instance would draw the same "random"
	// keys (runtime/RATIONALE.md, "Why is randomness never fake?").
	s.random = cfg.Random
	if s.random == nil {
		s.random = crand.Reader
	}
	size := uint64(0)
	for _, kv := range cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" {
			return nil, errors.New("environ invalid: empty key")
		}
		if strings.IndexByte(kv, 0) >= 0 {
			return nil, fmt.Errorf("environ invalid: %q contains a NUL character", k)
		}
		e := []byte(k + "=" + v)
		size += uint64(len(e)) + 1
		if size > 1<<32-1 {
			return nil, errors.New("environ invalid: exceeds maximum size")
		}
		s.env = append(s.env, e)
	}
	s.envSize = uint32(size)
	return s, nil
}

// Interrupt marks the instance interrupted and wakes a sleeping
// poll_oneoff. Safe from any goroutine; calls after the first do nothing.
func (s *State) Interrupt() {
	if s.interrupted.CompareAndSwap(false, true) {
		close(s.wake)
	}
}

// Interrupted reports whether Interrupt was called. Engines check it before
// every host function call.
func (s *State) Interrupted() bool { return s.interrupted.Load() }

// checkEvery is how many units of work (iovecs, subscriptions, bytes/256)
// a function does between two interrupt checks.
const checkEvery = 1 << 12

// check ends the call if the instance was interrupted.
func (s *State) check() {
	if s.interrupted.Load() {
		panic(ErrInterrupted)
	}
}

// walltime and nanotime are the clocks: real when granted, else wazero's
// fakes, which advance 1 ms per reading (each clock on its own).
func (s *State) walltime() int64 {
	if s.clock {
		return time.Now().UnixNano()
	}
	s.fakeWall += fakeStep
	return s.fakeWall
}

func (s *State) nanotime() int64 {
	if s.clock {
		return int64(time.Since(monoBase))
	}
	s.fakeMono += fakeStep
	return s.fakeMono
}

// sleep sleeps d when the clock is granted (else returns at once, as
// wazero's fake nanosleep does). It ends the call (panics ErrInterrupted)
// when the instance is interrupted or ctx ends first.
func (s *State) sleep(ctx context.Context, d time.Duration) {
	if !s.clock || d <= 0 {
		return
	}
	s.check()
	t := time.NewTimer(d)
	defer t.Stop()
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	select {
	case <-t.C:
	case <-s.wake:
		panic(ErrInterrupted)
	case <-done:
		panic(ErrInterrupted)
	}
}

// lookup reports whether fd is an open descriptor: one of stdin, stdout and
// stderr not closed. There are no others: nothing can be opened without
// preopens or sockets.
func (s *State) lookup(fd int32) bool { return fd >= 0 && fd <= 2 && s.open[fd] }

// exit ends the call with the guest's exit code.
func exit(code uint32) { panic(&engine.ExitError{Code: code}) }
