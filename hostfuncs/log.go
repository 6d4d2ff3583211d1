package hostfuncs

import (
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"unicode/utf8"

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
			guest = append(guest, slog.String("raw", validUTF8(attrs)))
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
	c.logger().Log(c.ctx, lvl, validUTF8(msg), args...)
	return nil
}

// GuestLogGroup is the slog group that holds a guest's log attributes.
const GuestLogGroup = "guest"

func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string([]rune(string(b)))
}
