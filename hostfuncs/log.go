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
	max := uint32(c.Env.limits().MaxMessageBytes)
	msg, err := read(mem, uint32(stack[1]), min(uint32(stack[2]), max))
	var attrs []byte
	if err == nil {
		attrs, err = read(mem, uint32(stack[3]), min(uint32(stack[4]), max))
	}
	if err == nil {
		err = c.Log(int32(stack[0]), msg, attrs)
	}
	stack[0] = errnoStatus(err)
}

// Log emits a guest log record on the provider's logger, with the call's
// provider, method and machine attributes. attrs is a JSON object (or
// empty); attributes that are not valid JSON are kept as one raw string so
// nothing the guest said is lost.
func (c *Call) Log(level int32, msg, attrs []byte) error {
	if err := c.check(abi.ImportLog, abi.CapLog); err != nil {
		return err
	}
	lvl := slog.Level(level)
	if !c.logger().Enabled(c.ctx, lvl) {
		return nil
	}
	args := make([]any, 0, 8)
	if len(attrs) > 0 {
		var obj map[string]any
		if err := json.Unmarshal(attrs, &obj); err != nil {
			args = append(args, slog.String("attrs", string(attrs)))
		} else {
			keys := make([]string, 0, len(obj))
			for k := range obj {
				keys = append(keys, k)
			}
			sort.Strings(keys) // deterministic order in the log line
			for _, k := range keys {
				args = append(args, slog.Any(k, obj[k]))
			}
		}
	}
	c.logger().Log(c.ctx, lvl, validUTF8(msg), args...)
	return nil
}

func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string([]rune(string(b)))
}
