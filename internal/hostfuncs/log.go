package hostfuncs

import (
	"context"
	"encoding/json"
	"log/slog"
	"sort"

	"github.com/wasmprov/wasmprov/abi"
)

// log: (func (param $level i32) (param $msg i32) (param $msg_len i32)
// (param $attrs i32) (param $attrs_len i32) (result i32))
func logFunc(ctx context.Context, mem Memory, stack []uint64) {
	c := CallFrom(ctx)
	if c == nil {
		stack[0] = errnoStatus(errorf(abi.ErrnoUnavailable, "no call in progress"))
		return
	}
	msgPtr, msgLen, attrsPtr, attrsLen := uint32(stack[1]), uint32(stack[2]), uint32(stack[3]), uint32(stack[4])
	err := checkRange(mem, "message", msgPtr, msgLen)
	if err == nil {
		err = checkRange(mem, "attributes", attrsPtr, attrsLen)
	}
	if err == nil {
		err = c.check(abi.ImportLog, abi.CapLog)
	}
	if err == nil && !c.logger().Enabled(c.ctx, slog.Level(int32(stack[0]))) {
		stack[0] = 0 // nothing is copied for a level nobody records
		return
	}
	max := uint32(c.Env.limits().MaxMessageBytes)
	msgLen, attrsLen = min(msgLen, max), min(attrsLen, max)
	if err == nil {
		err = c.admitLog(int64(msgLen) + int64(attrsLen))
	}
	if err == nil {
		err = c.charge(int64(msgLen) + int64(attrsLen))
	}
	if err == nil {
		msg, _ := read(mem, msgPtr, msgLen)
		attrs, _ := read(mem, attrsPtr, attrsLen)
		err = c.Log(int32(stack[0]), msg, attrs)
	}
	stack[0] = errnoStatus(err)
}

// Log emits a guest log record on the provider's logger, with the call's
// provider, method and machine attributes. attrs is a JSON object (or
// empty); attributes that are not valid JSON are kept as one raw string so
// nothing the guest said is lost.
//
// The guest's attributes go into a group of their own, GuestLogGroup, so
// a guest cannot set or shadow what the host says about the record —
// provider, method, machine, level, time, msg, or whatever keys the
// embedder's handler adds — and so forge a line attributed to another
// provider or Machine.
func (c *Call) Log(level int32, msg, attrs []byte) error {
	if err := c.check(abi.ImportLog, abi.CapLog); err != nil {
		return err
	}
	lvl := slog.Level(level)
	if !c.logger().Enabled(c.ctx, lvl) {
		return nil
	}
	var args []any
	if len(attrs) > 0 {
		var obj map[string]any
		var guest []any
		if err := json.Unmarshal(attrs, &obj); err != nil {
			guest = append(guest, slog.String("raw", Printable(string(attrs))))
		} else {
			keys := make([]string, 0, len(obj))
			for k := range obj {
				keys = append(keys, k)
			}
			sort.Strings(keys) // deterministic order in the log line
			guest = make([]any, 0, len(keys))
			for _, k := range keys {
				guest = append(guest, slog.Any(k, obj[k]))
			}
		}
		if len(guest) > 0 {
			args = []any{slog.Group(GuestLogGroup, guest...)}
		}
	}
	c.logger().Log(c.ctx, lvl, Printable(string(msg)), args...)
	return nil
}

// admitLog counts a record of n bytes against the call's log quota.
func (c *Call) admitLog(n int64) error {
	l := c.Env.limits()
	if c.logged+n > l.MaxLogBytesPerCall || c.logRecords+1 > l.MaxLogRecordsPerCall {
		if !c.logCapped {
			c.logCapped = true
			c.logger().Warn("guest log output of this call exceeds its limit; further records are dropped",
				"records", c.logRecords, "bytes", c.logged,
				"maxRecords", l.MaxLogRecordsPerCall, "maxBytes", l.MaxLogBytesPerCall)
		}
		return errorf(abi.ErrnoTooLarge, "this call has logged %d records, %d bytes: the limit is %d records, %d bytes",
			c.logRecords, c.logged, l.MaxLogRecordsPerCall, l.MaxLogBytesPerCall)
	}
	c.logged += n
	c.logRecords++
	return nil
}

// GuestLogGroup is the slog group that holds a guest's log attributes.
const GuestLogGroup = "guest"
