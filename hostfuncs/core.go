package hostfuncs

import (
	"context"

	"github.com/wasmprov/wasmprov/abi"
)

// input: (func (param $part i32) (param $buf i32) (param $limit i32) (result i64))
func input(ctx context.Context, mem Memory, stack []uint64) {
	c := CallFrom(ctx)
	part, buf, limit := abi.Input(int32(stack[0])), uint32(stack[1]), uint32(stack[2])
	if c == nil {
		stack[0] = errnoResult(abi.ErrnoUnavailable)
		return
	}
	b, err := c.Input(part)
	stack[0] = c.deliver(mem, b, err, buf, limit)
}

// take_result: (func (param $buf i32) (param $limit i32) (result i64))
func takeResult(ctx context.Context, mem Memory, stack []uint64) {
	c := CallFrom(ctx)
	buf, limit := uint32(stack[0]), uint32(stack[1])
	if c == nil || c.pending == nil {
		stack[0] = errnoResult(abi.ErrnoInvalid)
		return
	}
	n := len(c.pending)
	if uint32(n) <= limit && n > 0 {
		if !mem.Write(buf, c.pending) {
			stack[0] = errnoResult(abi.ErrnoInvalid)
			return
		}
		c.pending = nil
	}
	stack[0] = uint64(int64(n))
}

// output: (func (param $ptr i32) (param $len i32) (result i32))
func output(ctx context.Context, mem Memory, stack []uint64) {
	c := CallFrom(ctx)
	b, err := read(mem, uint32(stack[0]), uint32(stack[1]))
	if err == nil && c != nil {
		err = c.SetOutput(b)
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
	max := uint32(c.Env.limits().MaxMessageBytes)
	reason, err := read(mem, uint32(stack[0]), min(uint32(stack[1]), 256))
	if err == nil {
		var msg []byte
		msg, err = read(mem, uint32(stack[2]), min(uint32(stack[3]), max))
		if err == nil {
			c.SetError(string(reason), string(msg), int64(stack[4]))
		}
	}
	stack[0] = errnoStatus(err)
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
