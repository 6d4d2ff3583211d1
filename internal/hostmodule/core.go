package hostmodule

import (
	"context"

	"github.com/wasmprov/wasmprov/abi"
)

// Every host function checks its arguments in the same order, so a guest
// gets the same answer on every engine (abi/SPEC.md §6.4): outside a call
// UNAVAILABLE; then every (pointer, length) range — including the result
// buffer (buf, limit), before any work is done — must lie inside linear
// memory, else INVALID; then the capability (NOT_DECLARED); then the size
// limits (TOO_LARGE); then what the function itself checks.

// input: (func (param $part i32) (param $buf i32) (param $limit i32) (result i64))
func input(ctx context.Context, mem Memory, stack []uint64) {
	c := CallFrom(ctx)
	part, buf, limit := abi.Input(int32(stack[0])), uint32(stack[1]), uint32(stack[2])
	if c == nil {
		stack[0] = errnoResult(abi.ErrnoUnavailable)
		return
	}
	if err := checkRange(mem, "result buffer", buf, limit); err != nil {
		stack[0] = c.deliver(mem, nil, err, buf, limit)
		return
	}
	b, err := c.Input(part)
	stack[0] = c.deliver(mem, b, err, buf, limit)
}

// take_result: (func (param $buf i32) (param $limit i32) (result i64))
func takeResult(ctx context.Context, mem Memory, stack []uint64) {
	c := CallFrom(ctx)
	buf, limit := uint32(stack[0]), uint32(stack[1])
	if c == nil {
		stack[0] = errnoResult(abi.ErrnoUnavailable)
		return
	}
	if !inBounds(mem, buf, limit) || c.pending == nil {
		// The pending result stays: it is what the guest is after.
		stack[0] = errnoResult(abi.ErrnoInvalid)
		return
	}
	n := len(c.pending)
	if uint32(n) <= limit && n > 0 {
		mem.Write(buf, c.pending)
		c.pending = nil
	}
	stack[0] = uint64(int64(n))
}

// output: (func (param $ptr i32) (param $len i32) (result i32))
func output(ctx context.Context, mem Memory, stack []uint64) {
	c := CallFrom(ctx)
	if c == nil {
		stack[0] = errnoStatus(errorf(abi.ErrnoUnavailable, "no call in progress"))
		return
	}
	ptr, n := uint32(stack[0]), uint32(stack[1])
	err := checkRange(mem, "output", ptr, n)
	if err == nil {
		err = c.checkOutputSize(int64(n))
	}
	if err == nil {
		err = c.charge(int64(n))
	}
	if err == nil {
		b, _ := mem.Read(ptr, n)
		err = c.SetOutput(b) // copies
	}
	c.OutputRefused = 0
	if e, ok := err.(*Error); ok {
		c.OutputRefused = e.Errno
	}
	stack[0] = errnoStatus(err)
}

// set_error: (func (param $reason i32) (param $reason_len i32) (param $msg i32)
// (param $msg_len i32) (param $retry_after_ms i64) (result i32))
func setError(ctx context.Context, mem Memory, stack []uint64) {
	c := CallFrom(ctx)
	if c == nil {
		stack[0] = errnoStatus(errorf(abi.ErrnoUnavailable, "no call in progress"))
		return
	}
	reasonPtr, reasonLen, msgPtr, msgLen := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	retry := int64(stack[4])
	err := checkRange(mem, "reason", reasonPtr, reasonLen)
	if err == nil {
		err = checkRange(mem, "message", msgPtr, msgLen)
	}
	if err == nil && retry < 0 {
		err = errorf(abi.ErrnoInvalid, "retry_after_ms %d is negative", retry)
	}
	reasonLen, msgLen = min(reasonLen, MaxReasonBytes), min(msgLen, uint32(c.Env.limits().MaxMessageBytes))
	if err == nil {
		err = c.charge(int64(reasonLen) + int64(msgLen))
	}
	if err == nil {
		reason, _ := read(mem, reasonPtr, reasonLen)
		msg, _ := read(mem, msgPtr, msgLen)
		c.SetError(string(reason), string(msg), retry)
	}
	stack[0] = errnoStatus(err)
}

// MaxReasonBytes is how much of set_error's reason the host keeps.
const MaxReasonBytes = 256

// inBounds reports whether [ptr, ptr+n) lies inside the guest's memory
// (n == 0: ptr at most its size). Memory.Read returns a view, so this copies
// nothing.
func inBounds(mem Memory, ptr, n uint32) bool {
	_, ok := mem.Read(ptr, n)
	return ok
}

func checkRange(mem Memory, what string, ptr, n uint32) error {
	if !inBounds(mem, ptr, n) {
		return errorf(abi.ErrnoInvalid, "%s range [%d, %d) is outside linear memory", what, ptr, uint64(ptr)+uint64(n))
	}
	return nil
}

// read copies len bytes at ptr out of the guest's memory.
func read(mem Memory, ptr, n uint32) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	b, ok := mem.Read(ptr, n)
	if !ok {
		return nil, errorf(abi.ErrnoInvalid, "memory range [%d, %d) is out of bounds", ptr, uint64(ptr)+uint64(n))
	}
	return append([]byte(nil), b...), nil
}

// charge counts n bytes the guest hands the host against the call's
// MaxBytesPerCall, refusing them past it: a guest must not make the host
// copy without end within one call, even before its deadline.
func (c *Call) charge(n int64) error {
	max := c.Env.limits().MaxBytesPerCall
	if c.sent+n > max {
		return errorf(abi.ErrnoTooLarge, "the call has handed the host %d bytes; %d more exceed the limit of %d per call", c.sent, n, max)
	}
	c.sent += n
	return nil
}

// deliver hands a result or an error to the guest: a result that fits in
// [buf, buf+limit) is written there; otherwise it (or the error message)
// becomes the pending result for take_result. It returns the i64 the host
// function returns.
func (c *Call) deliver(mem Memory, b []byte, err error, buf, limit uint32) uint64 {
	if err != nil {
		e, ok := err.(*Error)
		if !ok {
			e = &Error{Errno: abi.ErrnoFailed, Message: err.Error()}
		}
		c.pending = []byte(e.Message)
		return errnoResult(e.Errno)
	}
	c.pending = nil
	if uint32(len(b)) <= limit {
		if len(b) > 0 && !mem.Write(buf, b) {
			c.pending = []byte("result buffer is out of bounds")
			return errnoResult(abi.ErrnoInvalid)
		}
		return uint64(len(b))
	}
	c.pending = b
	return uint64(len(b))
}

func errnoResult(e abi.Errno) uint64 { return uint64(int64(e)) }

// errnoStatus is the i32 result of output, set_error and log: 0 or an errno.
func errnoStatus(err error) uint64 {
	if err == nil {
		return 0
	}
	if e, ok := err.(*Error); ok {
		return uint64(uint32(int32(e.Errno))) // an i32 result: upper bits ignored
	}
	return errnoStatus(&Error{Errno: abi.ErrnoFailed})
}
