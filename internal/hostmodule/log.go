package hostmodule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sort"
	"strconv"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/internal/guesttext"
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
	max := c.Env.limits().MaxMessageBytes
	msgLen, attrsLen = uint32(min(int64(msgLen), max)), uint32(min(int64(attrsLen), max))
	if err == nil {
		err = c.logRoom() // a call that spent its quota pays for no copy
	}
	if err == nil {
		err = c.charge(int64(msgLen) + int64(attrsLen))
	}
	if err == nil {
		msg, _ := read(mem, msgPtr, msgLen)
		attrs, _ := read(mem, attrsPtr, attrsLen)
		text, args, size := c.record(msg, attrs)
		if err = c.admitLog(size); err == nil {
			c.logger().Log(c.ctx, slog.Level(int32(stack[0])), text, args...)
		}
	}
	stack[0] = errnoStatus(err)
}

// Log emits a guest log record on the provider's logger, with the call's
// provider, method and machine attributes. attrs is a JSON object (or
// empty); attributes that are not valid JSON are kept as one raw string so
// nothing the guest said is lost. Log charges no quota: the log host
// function does (logFunc); a native provider is trusted code.
func (c *Call) Log(level int32, msg, attrs []byte) error {
	if err := c.check(abi.ImportLog, abi.CapLog); err != nil {
		return err
	}
	lvl := slog.Level(level)
	if !c.logger().Enabled(c.ctx, lvl) {
		return nil
	}
	text, args, _ := c.record(msg, attrs)
	c.logger().Log(c.ctx, lvl, text, args...)
	return nil
}

// record is a guest log record as the host emits it — the message made
// printable and cut to MaxMessageBytes, the attributes in a group of their
// own with every key and string made printable — and its size: an upper
// bound of the bytes the guest's text takes in the line slog's JSON or
// text handler writes, which is what the per-call log quota counts (the
// guest's raw bytes would undercount: replacing a control byte triples
// it, escaping a quote doubles it).
//
// The guest's attributes go into a group of their own, GuestLogGroup, so
// a guest cannot set or shadow what the host says about the record —
// provider, method, machine, level, time, msg, or whatever keys the
// embedder's handler adds — and so forge a line attributed to another
// provider or Machine.
func (c *Call) record(msg, attrs []byte) (text string, args []any, size int64) {
	max := int(c.Env.limits().MaxMessageBytes)
	text = guesttext.ClipPrintable(string(msg), max)
	size = int64(guesttext.EscapedLen(text))
	if len(attrs) == 0 {
		return text, nil, size
	}
	var guest []any
	if obj, err := decodeAttrs(attrs); err != nil {
		raw := guesttext.ClipPrintable(string(attrs), max)
		guest = append(guest, slog.String("raw", raw))
		size += int64(len("raw") + guesttext.EscapedLen(raw) + attrOverhead)
	} else {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys) // deterministic order in the log line
		guest = make([]any, 0, len(keys))
		for _, k := range keys {
			v := printableJSON(obj[k])
			enc, _ := json.Marshal(v) // of what decodeAttrs made: cannot fail
			key := guesttext.PrintableLine(k)
			guest = append(guest, slog.Any(key, v))
			size += int64(guesttext.EscapedLen(key) + len(enc) + attrOverhead)
		}
	}
	if len(guest) > 0 {
		args = []any{slog.Group(GuestLogGroup, guest...)}
	}
	return text, args, size
}

// attrOverhead bounds what a handler writes around one guest attribute
// besides its key and value: `,"k":` in JSON, ` guest.k=` plus quotes in
// text.
const attrOverhead = len(" "+GuestLogGroup+".=") + 2

// decodeAttrs decodes a guest's attributes object as json.Unmarshal
// would, but with its numbers as written (json.Number): a float64 for
// every number turned IDs into 3.164454e+06 and lost digits past 2^53.
func decodeAttrs(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the attributes object")
	}
	return obj, nil
}

// printableJSON returns v, a value decodeAttrs made, with every string in
// it (object keys included) made printable and every number typed: an
// int64 or uint64 if it is an integer that fits, else a float64, else (out
// of a float64's range) the number as written.
func printableJSON(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(v.String(), 10, 64); err == nil {
			return u
		}
		if f, err := v.Float64(); err == nil {
			return f
		}
		return v
	case string:
		return guesttext.Printable(v)
	case []any:
		for i := range v {
			v[i] = printableJSON(v[i])
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[guesttext.PrintableLine(k)] = printableJSON(e)
		}
		return out
	}
	return v
}

// logRoom refuses a record, before it is read, once the call's log quota
// is spent.
func (c *Call) logRoom() error {
	if l := c.Env.limits(); c.logged >= l.MaxLogBytesPerCall || c.logRecords >= l.MaxLogRecordsPerCall {
		return c.admitLog(1)
	}
	return nil
}

// admitLog counts a record of n bytes (its size as record says) against
// the call's log quota.
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
