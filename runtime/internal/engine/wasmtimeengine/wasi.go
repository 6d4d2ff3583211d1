//go:build wasmtime

package wasmtimeengine

import (
	crand "crypto/rand"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v37"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
)

// WASI errno values used by the shim.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
)

// fakeWalltime is the wall clock of a guest without the clock capability
// (2022-01-01T00:00:00Z, the value wazero uses), so both engines give a
// guest the same view.
const fakeWalltime = 1640995200 * int64(time.Second)

// wasiShim replaces the WASI functions through which a guest could reach
// the host's clock, randomness, sleep or terminal.
type wasiShim struct {
	inst           *instance
	stdout, stderr io.Writer
	clock          bool
	random         io.Reader
	fakeMonotonic  int64
	start          time.Time
}

func newWASIShim(i *instance, c engine.InstanceConfig) *wasiShim {
	w := &wasiShim{inst: i, stdout: c.Stdout, stderr: c.Stderr, clock: c.Clock, start: time.Now()}
	if c.Random {
		w.random = crand.Reader
	} else {
		w.random = rand.NewChaCha8([32]byte{'w', 'a', 's', 'm', 'p', 'r', 'o', 'v'}) // deterministic
	}
	return w
}

const wasiModule = "wasi_snapshot_preview1"

func (w *wasiShim) define(l *wasmtime.Linker) error {
	i32 := []engine.ValueType{0x7f}
	defs := []struct {
		name   string
		params []engine.ValueType
		fn     func(memory, []wasmtime.Val) int32
	}{
		{"fd_write", []engine.ValueType{0x7f, 0x7f, 0x7f, 0x7f}, w.fdWrite},
		{"clock_time_get", []engine.ValueType{0x7f, 0x7e, 0x7f}, w.clockTimeGet},
		{"random_get", []engine.ValueType{0x7f, 0x7f}, w.randomGet},
		{"poll_oneoff", []engine.ValueType{0x7f, 0x7f, 0x7f, 0x7f}, w.pollOneoff},
	}
	for _, d := range defs {
		fn := d.fn
		err := l.FuncNew(wasiModule, d.name, funcType(d.params, i32), func(c *wasmtime.Caller, args []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
			mem := memory{caller: c, mem: w.inst.mem}
			if mem.mem == nil {
				if ex := c.GetExport("memory"); ex != nil {
					mem.mem = ex.Memory()
				}
			}
			return []wasmtime.Val{wasmtime.ValI32(fn(mem, args))}, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// fd_write(fd, iovs, iovs_len, nwritten) -> errno: stdout and stderr go to
// the instance's writers; no other descriptor can be written.
func (w *wasiShim) fdWrite(mem memory, a []wasmtime.Val) int32 {
	fd, iovs, n, nwritten := a[0].I32(), uint32(a[1].I32()), uint32(a[2].I32()), uint32(a[3].I32())
	var out io.Writer
	switch fd {
	case 1:
		out = w.stdout
	case 2:
		out = w.stderr
	default:
		return errnoBadf
	}
	var total uint32
	for k := uint32(0); k < n; k++ {
		iov, ok := mem.Read(iovs+8*k, 8)
		if !ok {
			return errnoFault
		}
		ptr, size := binary.LittleEndian.Uint32(iov), binary.LittleEndian.Uint32(iov[4:])
		b, ok := mem.Read(ptr, size)
		if !ok {
			return errnoFault
		}
		if out != nil {
			_, _ = out.Write(b)
		}
		total += size
	}
	return w.putU32(mem, nwritten, total)
}

func (w *wasiShim) putU32(mem memory, at, v uint32) int32 {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	if !mem.Write(at, b[:]) {
		return errnoFault
	}
	return errnoSuccess
}

func (w *wasiShim) putU64(mem memory, at uint32, v uint64) int32 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	if !mem.Write(at, b[:]) {
		return errnoFault
	}
	return errnoSuccess
}

// now returns the clock id's time: real when the clock is granted, else a
// fixed wall clock and a monotonic clock that advances 1 ms per reading.
func (w *wasiShim) now(id int32) (int64, bool) {
	switch id {
	case 0: // realtime
		if w.clock {
			return time.Now().UnixNano(), true
		}
		return fakeWalltime, true
	case 1, 2, 3: // monotonic, process and thread CPU time
		if w.clock {
			return int64(time.Since(w.start)), true
		}
		w.fakeMonotonic += int64(time.Millisecond)
		return w.fakeMonotonic, true
	}
	return 0, false
}

// clock_time_get(id, precision, time) -> errno
func (w *wasiShim) clockTimeGet(mem memory, a []wasmtime.Val) int32 {
	t, ok := w.now(a[0].I32())
	if !ok {
		return errnoInval
	}
	return w.putU64(mem, uint32(a[2].I32()), uint64(t))
}

// random_get(buf, len) -> errno
func (w *wasiShim) randomGet(mem memory, a []wasmtime.Val) int32 {
	buf, n := uint32(a[0].I32()), uint32(a[1].I32())
	b := make([]byte, n)
	if _, err := io.ReadFull(w.random, b); err != nil {
		return errnoFault
	}
	if !mem.Write(buf, b) {
		return errnoFault
	}
	return errnoSuccess
}

// poll_oneoff(in, out, nsubscriptions, nevents) -> errno. Clock
// subscriptions sleep for the shortest timeout, only with the clock
// granted and never past the call's context; descriptor subscriptions are
// reported ready (stdio) or bad.
func (w *wasiShim) pollOneoff(mem memory, a []wasmtime.Val) int32 {
	in, out, nsubs, neventsPtr := uint32(a[0].I32()), uint32(a[1].I32()), uint32(a[2].I32()), uint32(a[3].I32())
	if nsubs == 0 {
		return errnoInval
	}
	subs, ok := mem.Read(in, nsubs*48)
	if !ok {
		return errnoFault
	}
	subs = append([]byte(nil), subs...)
	events := make([]byte, nsubs*32)
	var sleep time.Duration = -1
	for k := uint32(0); k < nsubs; k++ {
		s, e := subs[k*48:(k+1)*48], events[k*32:(k+1)*32]
		copy(e[0:8], s[0:8]) // userdata
		e[10] = s[8]         // event type = subscription tag
		switch s[8] {
		case 0: // clock
			d := time.Duration(binary.LittleEndian.Uint64(s[24:32]))
			if binary.LittleEndian.Uint16(s[40:42])&1 != 0 { // absolute time
				now, _ := w.now(int32(binary.LittleEndian.Uint32(s[16:20])))
				d -= time.Duration(now)
			}
			if sleep < 0 || d < sleep {
				sleep = max(d, 0)
			}
		case 1, 2: // fd_read, fd_write
			if fd := binary.LittleEndian.Uint32(s[16:20]); fd > 2 {
				binary.LittleEndian.PutUint16(e[8:10], errnoBadf)
			}
		default:
			binary.LittleEndian.PutUint16(e[8:10], errnoInval)
		}
	}
	if sleep > 0 && w.clock {
		w.sleep(sleep)
	}
	if !mem.Write(out, events) {
		return errnoFault
	}
	return w.putU32(mem, neventsPtr, nsubs)
}

func (w *wasiShim) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.inst.ctx.Done():
	}
}
