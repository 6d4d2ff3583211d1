package hostmodule

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
)

// flatMemory is a linear memory of fixed size for calling host functions
// without an engine; it counts writes so tests see what was touched.
type flatMemory struct {
	b      []byte
	writes int
}

func (m *flatMemory) Read(off, n uint32) ([]byte, bool) {
	if uint64(off)+uint64(n) > uint64(len(m.b)) {
		return nil, false
	}
	return m.b[off : off+n], true
}

func (m *flatMemory) Write(off uint32, v []byte) bool {
	if uint64(off)+uint64(len(v)) > uint64(len(m.b)) {
		return false
	}
	m.writes++
	copy(m.b[off:], v)
	return true
}

const argsMemSize = 64 << 10

// hostFunction returns the wasmprov_v1 function name.
func hostFunction(t testing.TB, name string) Function {
	t.Helper()
	for _, f := range Functions() {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no host function %s", name)
	return Function{}
}

// argsCall is a Create call on a small Machine with every capability.
func argsCall(granted abi.Capability, limits Limits) *Call {
	env := &Env{Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug})), Limits: limits}
	c := NewCall(context.Background(), env, abi.MethodCreate, granted)
	m := &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", UID: "u"}}
	m.Spec.ProviderSpec.Value = &kruntime.RawExtension{Raw: []byte(`{"a":1}`)}
	c.Machine, c.Userdata = m, "#cloud-config"
	return c
}

const (
	n32 = 1<<32 - 1 // -1 as an i32
	big = 0x7fffffff
)

// TestArgumentChecks is abi/SPEC.md §6.4 line by line: each row calls one
// host function with one kind of argument and expects the result the
// table gives. Every range is checked before any work, so a refused call
// writes nothing into the guest's memory.
func TestArgumentChecks(t *testing.T) {
	type row struct {
		fn      string
		what    string
		args    []uint64
		want    int64 // the result, as the guest reads it (i32 results sign-extended)
		noCall  bool  // outside a call
		granted abi.Capability
		limits  Limits
		setup   func(*Call)
		check   func(*testing.T, *Call, *flatMemory)
		memory  []byte // copied to offset 0 instead of "{}"
	}
	errno := func(e abi.Errno) int64 { return int64(e) }
	all := abi.AllCapabilities
	// A well-formed http_do_bin frame for a host the call's (absent) HTTP
	// policy does not allow, and broken ones.
	frame := abi.AppendHTTPRequestFrame(nil, &abi.HTTPRequest{Method: "GET", URL: "https://api.example.com/v1"})
	fl := uint64(len(frame))
	withCount := func(count uint32) []byte { // method, url, then a header count with nothing after it
		b := bytes.Clone(frame[:len(frame)-8])
		return binary.LittleEndian.AppendUint32(b, count)
	}
	rows := []row{
		{fn: abi.ImportInput, what: "outside a call", args: []uint64{3, 0, 16}, want: errno(abi.ErrnoUnavailable), noCall: true},
		{fn: abi.ImportInput, what: "result buffer beyond memory", args: []uint64{3, argsMemSize - 4, 16}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportInput, what: "limit -1", args: []uint64{3, 0, n32}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportInput, what: "limit 0x7fffffff", args: []uint64{3, 0, big}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportInput, what: "buffer pointer -1, limit 0", args: []uint64{3, n32, 0}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportInput, what: "unknown part 0", args: []uint64{0, 0, 16}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportInput, what: "unknown part -1", args: []uint64{n32, 0, 16}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportInput, what: "unknown part 8", args: []uint64{8, 0, 16}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportInput, what: "part 7 (machine_list) outside SetMetricsForMachines", args: []uint64{7, 0, 16}, want: errno(abi.ErrnoUnavailable)},
		{fn: abi.ImportInput, what: "part not offered (new_uid in Create)", args: []uint64{5, 0, 16}, want: errno(abi.ErrnoUnavailable)},
		{fn: abi.ImportInput, what: "fits", args: []uint64{3, 100, 16}, want: 7, check: func(t *testing.T, _ *Call, m *flatMemory) {
			if string(m.b[100:107]) != `{"a":1}` {
				t.Errorf("memory holds %q", m.b[100:107])
			}
		}},
		{fn: abi.ImportInput, what: "larger than the limit: pending", args: []uint64{3, 100, 2}, want: 7, check: func(t *testing.T, c *Call, m *flatMemory) {
			if string(c.pending) != `{"a":1}` || m.writes != 0 {
				t.Errorf("pending %q, %d writes", c.pending, m.writes)
			}
		}},

		{fn: abi.ImportTakeResult, what: "outside a call", args: []uint64{0, 16}, want: errno(abi.ErrnoUnavailable), noCall: true},
		{fn: abi.ImportTakeResult, what: "nothing pending", args: []uint64{0, 16}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportTakeResult, what: "buffer beyond memory, result kept", args: []uint64{argsMemSize, 16}, want: errno(abi.ErrnoInvalid),
			setup: func(c *Call) { c.pending = []byte("data") },
			check: func(t *testing.T, c *Call, _ *flatMemory) {
				if string(c.pending) != "data" {
					t.Error("the pending result was lost")
				}
			}},
		{fn: abi.ImportTakeResult, what: "limit -1", args: []uint64{0, n32}, want: errno(abi.ErrnoInvalid), setup: func(c *Call) { c.pending = []byte("data") }},
		{fn: abi.ImportTakeResult, what: "length query (0, 0)", args: []uint64{0, 0}, want: 4, setup: func(c *Call) { c.pending = []byte("data") }},
		{fn: abi.ImportTakeResult, what: "copies and clears", args: []uint64{8, 4}, want: 4, setup: func(c *Call) { c.pending = []byte("data") },
			check: func(t *testing.T, c *Call, m *flatMemory) {
				if c.pending != nil || string(m.b[8:12]) != "data" {
					t.Errorf("pending %q, memory %q", c.pending, m.b[8:12])
				}
			}},

		{fn: abi.ImportOutput, what: "outside a call", args: []uint64{0, 4}, want: errno(abi.ErrnoUnavailable), noCall: true},
		{fn: abi.ImportOutput, what: "range beyond memory", args: []uint64{argsMemSize - 2, 4}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportOutput, what: "length -1", args: []uint64{0, n32}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportOutput, what: "over the result limit", args: []uint64{0, 4096}, want: errno(abi.ErrnoTooLarge), limits: Limits{MaxResultBytes: 1024}},
		{fn: abi.ImportOutput, what: "over the bytes per call", args: []uint64{0, 4096}, want: errno(abi.ErrnoTooLarge),
			limits: Limits{MaxBytesPerCall: 8192}, setup: func(c *Call) { c.sent = 5000 }},
		{fn: abi.ImportOutput, what: "sets the result", args: []uint64{0, 4}, want: 0, check: func(t *testing.T, c *Call, _ *flatMemory) {
			if len(c.Output) != 4 || c.sent != 4 {
				t.Errorf("output %q, %d bytes counted", c.Output, c.sent)
			}
		}},

		{fn: abi.ImportSetError, what: "outside a call", args: []uint64{0, 0, 0, 0, 0}, want: errno(abi.ErrnoUnavailable), noCall: true},
		{fn: abi.ImportSetError, what: "reason beyond memory", args: []uint64{argsMemSize, 1, 0, 0, 0}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportSetError, what: "reason length -1", args: []uint64{0, n32, 0, 0, 0}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportSetError, what: "message length 0x7fffffff", args: []uint64{0, 0, 0, big, 0}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportSetError, what: "negative retry_after_ms", args: []uint64{0, 0, 0, 0, uint64(1<<64 - 5)}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportSetError, what: "retry_after_ms of 584 years clamped", args: []uint64{0, 0, 0, 0, 18446744073710}, want: 0,
			check: func(t *testing.T, c *Call, _ *flatMemory) {
				if c.RetryAfter != MaxRetryAfter {
					t.Errorf("RetryAfter %v, want %v", c.RetryAfter, MaxRetryAfter)
				}
			}},
		{fn: abi.ImportSetError, what: "reason truncated at 256 bytes", args: []uint64{0, 1000, 0, 0, 1500}, want: 0,
			check: func(t *testing.T, c *Call, _ *flatMemory) {
				if len(c.ErrReason) != MaxReasonBytes || c.RetryAfter != 1500*time.Millisecond {
					t.Errorf("reason of %d bytes, retry %v", len(c.ErrReason), c.RetryAfter)
				}
			}},
		{fn: abi.ImportSetError, what: "over the bytes per call", args: []uint64{0, 10, 0, 100, 0}, want: errno(abi.ErrnoTooLarge),
			limits: Limits{MaxBytesPerCall: 100}},

		{fn: abi.ImportLog, what: "outside a call", args: []uint64{0, 0, 1, 0, 0}, want: errno(abi.ErrnoUnavailable), noCall: true},
		{fn: abi.ImportLog, what: "message beyond memory", args: []uint64{0, argsMemSize, 1, 0, 0}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportLog, what: "attributes length -1", args: []uint64{0, 0, 1, 0, n32}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportLog, what: "not granted", args: []uint64{0, 0, 1, 0, 0}, want: errno(abi.ErrnoNotDeclared), granted: abi.CapHTTP},
		{fn: abi.ImportLog, what: "over the bytes per call", args: []uint64{uint64(uint32(int32(slog.LevelError))), 0, 200, 0, 0}, want: errno(abi.ErrnoTooLarge),
			limits: Limits{MaxBytesPerCall: 100}},

		{fn: abi.ImportPVList, what: "outside a call", args: []uint64{0, 2, 0, 16}, want: errno(abi.ErrnoUnavailable), noCall: true},
		{fn: abi.ImportPVList, what: "request beyond memory", args: []uint64{argsMemSize - 1, 2, 0, 16}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportPVList, what: "request length -1", args: []uint64{0, n32, 0, 16}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportPVList, what: "result buffer beyond memory", args: []uint64{0, 2, argsMemSize - 8, 16}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportPVList, what: "result limit 0x7fffffff", args: []uint64{0, 2, 0, big}, want: errno(abi.ErrnoInvalid)},
		{fn: abi.ImportPVList, what: "not granted", args: []uint64{0, 2, 0, 16}, want: errno(abi.ErrnoNotDeclared), granted: abi.CapLog},
		{fn: abi.ImportPVList, what: "over the request limit", args: []uint64{0, 4096, 0, 16}, want: errno(abi.ErrnoTooLarge), limits: Limits{MaxRequestBytes: 1024}},
		{fn: abi.ImportPVList, what: "over the bytes per call", args: []uint64{0, 4096, 0, 16}, want: errno(abi.ErrnoTooLarge), limits: Limits{MaxBytesPerCall: 1024}},
		{fn: abi.ImportPVList, what: "over its uses per call", args: []uint64{0, 2, 0, 16}, want: errno(abi.ErrnoTooLarge), limits: Limits{MaxPVListsPerCall: 2},
			setup: func(c *Call) { c.uses = map[string]int64{abi.ImportPVList: 2} }},
		{fn: abi.ImportHTTPBin, what: "outside a call", args: []uint64{0, fl, 1024, 16}, want: errno(abi.ErrnoUnavailable), noCall: true, memory: frame},
		{fn: abi.ImportHTTPBin, what: "request beyond memory", args: []uint64{argsMemSize - 1, fl, 1024, 16}, want: errno(abi.ErrnoInvalid), memory: frame},
		{fn: abi.ImportHTTPBin, what: "request length -1", args: []uint64{0, n32, 1024, 16}, want: errno(abi.ErrnoInvalid), memory: frame},
		{fn: abi.ImportHTTPBin, what: "result buffer beyond memory", args: []uint64{0, fl, argsMemSize - 8, 16}, want: errno(abi.ErrnoInvalid), memory: frame},
		{fn: abi.ImportHTTPBin, what: "not granted", args: []uint64{0, fl, 1024, 16}, want: errno(abi.ErrnoNotDeclared), granted: abi.CapLog, memory: frame},
		{fn: abi.ImportHTTPBin, what: "over the request limit", args: []uint64{0, 4096, 1024, 16}, want: errno(abi.ErrnoTooLarge), limits: Limits{MaxRequestBytes: 1024}, memory: frame},
		{fn: abi.ImportHTTPBin, what: "over the bytes per call", args: []uint64{0, 4096, 8192, 16}, want: errno(abi.ErrnoTooLarge), limits: Limits{MaxBytesPerCall: 1024}, memory: frame},
		{fn: abi.ImportHTTPBin, what: "over the HTTP uses per call, counted with http_do", args: []uint64{0, fl, 1024, 16}, want: errno(abi.ErrnoTooLarge),
			limits: Limits{MaxHTTPRequestsPerCall: 2}, memory: frame,
			setup: func(c *Call) { c.uses = map[string]int64{abi.ImportHTTP: 2} }},
		{fn: abi.ImportHTTPBin, what: "truncated frame", args: []uint64{0, fl - 1, 1024, 16}, want: errno(abi.ErrnoInvalid), memory: frame},
		{fn: abi.ImportHTTPBin, what: "bytes after the body", args: []uint64{0, fl + 1, 1024, 16}, want: errno(abi.ErrnoInvalid), memory: frame},
		{fn: abi.ImportHTTPBin, what: "a length past the end", args: []uint64{0, 8, 1024, 16}, want: errno(abi.ErrnoInvalid),
			memory: binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 0xffffffff), 0)},
		{fn: abi.ImportHTTPBin, what: "header count beyond the frame", args: []uint64{0, fl - 4, 1024, 16}, want: errno(abi.ErrnoInvalid),
			memory: withCount(0xffffffff)},
		{fn: abi.ImportHTTPBin, what: "host not allowed", args: []uint64{0, fl, 1024, 16}, want: errno(abi.ErrnoDenied), memory: frame},
		{fn: abi.ImportHTTPBin, what: "counts a use", args: []uint64{0, fl, 1024, 16}, want: errno(abi.ErrnoDenied), memory: frame,
			check: func(t *testing.T, c *Call, _ *flatMemory) {
				if c.uses[abi.ImportHTTP] != 1 {
					t.Errorf("uses %v, want one http use", c.uses)
				}
			}},

		{fn: abi.ImportPVList, what: "no lister in the call", args: []uint64{0, 2, 0, 16}, want: errno(abi.ErrnoUnavailable),
			setup: func(c *Call) { c.Data = nil }},
	}
	for _, r := range rows {
		t.Run(r.fn+"/"+r.what, func(t *testing.T) {
			granted := r.granted
			if granted == 0 {
				granted = all
			}
			c := argsCall(granted, r.limits)
			mem := &flatMemory{b: make([]byte, argsMemSize)}
			copy(mem.b, "{}")
			if r.memory != nil {
				copy(mem.b, r.memory)
			}
			if r.setup != nil {
				r.setup(c)
			}
			ctx := WithCall(context.Background(), c)
			if r.noCall {
				ctx = context.Background()
			}
			f := hostFunction(t, r.fn)
			stack := make([]uint64, max(len(f.Params), len(f.Results)))
			copy(stack, r.args)
			before := bytes.Clone(mem.b)
			f.Fn(ctx, mem, stack)
			got := int64(stack[0])
			if len(f.Results) == 1 && f.Results[0] == I32 {
				got = int64(int32(uint32(stack[0])))
			}
			if got != r.want {
				t.Errorf("result %d (%s), want %d (%s)", got, abi.Errno(got), r.want, abi.Errno(r.want))
			}
			if r.want < 0 && !bytes.Equal(before, mem.b) {
				t.Error("a refused call wrote into guest memory")
			}
			if r.check != nil {
				r.check(t, c, mem)
			}
		})
	}
}

// FuzzHostArgs calls every wasmprov_v1 function with arbitrary arguments
// on a small memory. Whatever the arguments, the host answers with a
// length or one of the defined errnos, a range outside memory is always
// INVALID, and the host writes nothing outside [buf, buf+limit).
func FuzzHostArgs(f *testing.F) {
	fns := Functions()
	f.Add(uint8(0), uint32(3), uint32(0), uint32(16), uint32(0), uint32(0), int64(0))
	f.Add(uint8(1), uint32(n32), uint32(big), uint32(n32), uint32(0), uint32(0), int64(-1))
	f.Add(uint8(2), uint32(0), uint32(2), uint32(argsMemSize-8), uint32(16), uint32(0), int64(0))
	f.Add(uint8(5), uint32(0), uint32(1000), uint32(0), uint32(1500), uint32(0), int64(18446744073710))
	f.Fuzz(func(t *testing.T, which uint8, a0, a1, a2, a3, a4 uint32, a5 int64) {
		fn := fns[int(which)%len(fns)]
		c := argsCall(abi.AllCapabilities, Limits{})
		c.Data = nil // no host resources: data functions answer without reaching them
		mem := &flatMemory{b: make([]byte, 4096)}
		copy(mem.b, `{"labelSelector":"a=b"}`)
		stack := []uint64{uint64(a0), uint64(a1), uint64(a2), uint64(a3), uint64(a4)}
		if fn.Name == abi.ImportSetError {
			stack[4] = uint64(a5)
		}
		before := bytes.Clone(mem.b)
		fn.Fn(WithCall(context.Background(), c), mem, stack)
		got := int64(stack[0])
		if fn.Results[0] == I32 {
			got = int64(int32(uint32(stack[0])))
		}
		if got < 0 && (got < int64(abi.ErrnoNotFound) || got > int64(abi.ErrnoNotDeclared)) {
			t.Fatalf("%s answered %d, not a defined errno", fn.Name, got)
		}
		// The (buf, limit) pair of functions that return data.
		var buf, limit uint32
		switch {
		case fn.Name == abi.ImportInput:
			buf, limit = a1, a2
		case fn.Name == abi.ImportTakeResult:
			buf, limit = a0, a1
		case len(fn.Params) == 4:
			buf, limit = a2, a3
		default:
			if !bytes.Equal(before, mem.b) {
				t.Fatalf("%s wrote into guest memory", fn.Name)
			}
			return
		}
		if uint64(buf)+uint64(limit) > uint64(len(mem.b)) && got != int64(abi.ErrnoInvalid) {
			t.Fatalf("%s with buffer [%d, +%d) beyond memory answered %d, want INVALID", fn.Name, buf, limit, got)
		}
		for i := range mem.b {
			inBuf := uint64(i) >= uint64(buf) && uint64(i) < uint64(buf)+uint64(limit)
			if mem.b[i] != before[i] && !inBuf {
				t.Fatalf("%s wrote byte %d outside its buffer [%d, +%d)", fn.Name, i, buf, limit)
			}
		}
	})
}
