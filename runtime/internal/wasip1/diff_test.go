package wasip1_test

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	rand1 "math/rand"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
	"github.com/wasmprov/wasmprov/runtime/internal/engine"
	"github.com/wasmprov/wasmprov/runtime/internal/wasip1"
)

// The differential test runs the probe guest (module_test.go) on wazero's
// own wasi_snapshot_preview1 — the reference, configured as the wazero
// engine configured it before package wasip1: no arguments, GOGC=50, no
// preopens, stdout and stderr to buffers, wazero's fake clocks and random
// unless granted — and on package wasip1 bound by each engine, in
// lockstep, and requires the same result for every call: the errno (or
// trap, or exit code), a hash of the whole memory after it, and what
// reached stdout and stderr. Calls are valid and hostile: every parameter
// of every function through out-of-bounds and wrapping pointers and
// lengths, -1, bad and closed descriptors, every clock id and flag, huge
// iovec and subscription counts, overlapping buffers, and random mixes.
// The only differences allowed are the deliberate ones (knownDifference).

// memSize is the probe's memory (2 pages).
const memSize = 2 << 16

// A probeInstance is an instance of the probe on one implementation.
type probeInstance interface {
	call(name string, args ...uint64) (uint64, error)
	outputs() (stdout, stderr []byte)
	close()
}

type impl struct {
	name string
	// instantiate returns a fresh instance of the probe.
	instantiate func(t testing.TB, clock, random bool) probeInstance
	// ended classifies an error of a call: "exit:N" or "trap".
	ended func(err error) string
}

// reference is wazero's own WASI.
func reference(t testing.TB) impl {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithMemoryLimitPages(64))
	t.Cleanup(func() { rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	compiled, err := rt.CompileModule(ctx, probe())
	if err != nil {
		t.Fatal(err)
	}
	return impl{
		name: "reference",
		instantiate: func(t testing.TB, clock, random bool) probeInstance {
			i := &refInstance{}
			cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions().
				WithEnv("GOGC", "50").WithStdout(&i.stdout).WithStderr(&i.stderr)
			if clock {
				cfg = cfg.WithSysWalltime().WithSysNanotime().WithSysNanosleep()
			}
			if random {
				cfg = cfg.WithRandSource(crand.Reader)
			}
			if i.mod, err = rt.InstantiateModule(ctx, compiled, cfg); err != nil {
				t.Fatal(err)
			}
			return i
		},
		ended: func(err error) string {
			var exit *sys.ExitError
			if errors.As(err, &exit) {
				return fmt.Sprintf("exit:%d", exit.ExitCode())
			}
			return "trap"
		},
	}
}

type refInstance struct {
	mod            api.Module
	stdout, stderr bytes.Buffer
}

func (i *refInstance) call(name string, args ...uint64) (uint64, error) {
	f := i.mod.ExportedFunction(name)
	if f == nil {
		panic("no export " + name)
	}
	stack := make([]uint64, max(len(args), 1))
	copy(stack, args)
	err := f.CallWithStack(context.Background(), stack)
	return stack[0], err
}

func (i *refInstance) outputs() ([]byte, []byte) { return i.stdout.Bytes(), i.stderr.Bytes() }
func (i *refInstance) close()                    { i.mod.Close(context.Background()) }

// testRandom is the random source of an instance compared with wazero's
// WASI: without random (the comparison of memories), wazero's default
// fixed stream, math/rand seeded with 42; with it, crypto/rand, as the
// host always gives.
func testRandom(random bool) io.Reader {
	if random {
		return nil
	}
	return rand1.New(rand1.NewSource(wazeroSeed))
}

// wazeroSeed seeds wazero's default random source (math/rand).
const wazeroSeed = 42

// onEngine is package wasip1 as bound by an engine.
func onEngine(t testing.TB, te testEngine, wasm []byte) impl {
	ctx := context.Background()
	e := te.new(t)
	mod, err := e.Compile(ctx, wasm, engine.ModuleConfig{MemoryLimitPages: 64, Interruptible: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Close(ctx) })
	return impl{
		name: te.name,
		instantiate: func(t testing.TB, clock, random bool) probeInstance {
			i := &engineInstance{fns: map[string]engine.Function{}}
			var err error
			i.inst, err = mod.Instantiate(ctx, engine.InstanceConfig{
				Env: []string{"GOGC=50"}, Stdout: &i.stdout, Stderr: &i.stderr, Clock: clock, Random: testRandom(random),
			})
			if err != nil {
				t.Fatal(err)
			}
			return i
		},
		ended: func(err error) string {
			var exit *engine.ExitError
			if errors.As(err, &exit) {
				return fmt.Sprintf("exit:%d", exit.Code)
			}
			return "trap"
		},
	}
}

type engineInstance struct {
	inst           engine.Instance
	fns            map[string]engine.Function
	stdout, stderr bytes.Buffer
}

func (i *engineInstance) call(name string, args ...uint64) (uint64, error) {
	f, ok := i.fns[name]
	if !ok {
		if f = i.inst.Function(name); f == nil {
			panic("no export " + name)
		}
		i.fns[name] = f
	}
	stack := make([]uint64, max(len(args), 1))
	copy(stack, args)
	err := f.Call(context.Background(), stack)
	return stack[0], err
}

func (i *engineInstance) outputs() ([]byte, []byte) { return i.stdout.Bytes(), i.stderr.Bytes() }
func (i *engineInstance) close()                    { i.inst.Close(context.Background()) }

// A step is one call, after writing memory.
type step struct {
	writes  []write
	fn      string // a WASI function's name
	args    []uint64
	restart bool // start fresh instances before this step
}

type write struct {
	addr uint32
	data []byte
}

// outcome is what a step did on one implementation.
type outcome struct {
	res    string // errno, "exit:N" (and what the next call did), or "trap"
	mem    uint64 // hash of the memory after the call (0 when it ended)
	out    string // length and hash of stdout and stderr so far
	detail string // the error, for messages only
}

func (o outcome) String() string {
	s := fmt.Sprintf("result %s, memory %016x, output %s", o.res, o.mem, o.out)
	if o.detail != "" {
		d, _, _ := strings.Cut(o.detail, "\n")
		s += " (" + d + ")"
	}
	return s
}

func digest(b []byte) string {
	h := fnv.New64a()
	h.Write(b)
	return fmt.Sprintf("%d:%x", len(b), h.Sum64())
}

// knownDifference reports whether ours may differ from the reference's ref
// at s: where wazero's own code panics (package documentation).
func knownDifference(s step, ref, ours outcome) bool {
	if ref.res != "trap" {
		return false
	}
	switch {
	case s.fn == "poll_oneoff" && strings.Contains(ref.detail, "index out of range"):
		return ours.res == fmt.Sprint(wasip1.EFAULT)
	case s.fn == "fd_filestat_set_times" && strings.Contains(ref.detail, "nil pointer dereference"):
		return ours.res == fmt.Sprint(wasip1.ENOSYS)
	}
	return false
}

// lockstep runs steps on every implementation (impls[0] is the reference)
// and reports every difference. After a call that ends an instance on any
// implementation, every implementation starts a fresh one. It returns how
// many known differences it met.
func lockstep(t *testing.T, impls []impl, steps []step, clock, random, compareMem bool, setup []write) (known int) {
	t.Helper()
	insts := make([]probeInstance, len(impls))
	closeAll := func() {
		for k, in := range insts {
			if in != nil {
				in.close()
				insts[k] = nil
			}
		}
	}
	defer closeAll()
	diffs := 0
	for n, s := range steps {
		if s.restart {
			closeAll()
		}
		outs := make([]outcome, len(impls))
		ended := false
		for k, im := range impls {
			if insts[k] == nil {
				insts[k] = im.instantiate(t, clock, random)
				for _, w := range setup {
					writeMem(insts[k], w)
				}
			}
			in := insts[k]
			for _, w := range s.writes {
				writeMem(in, w)
			}
			v, err := in.call("w_"+s.fn, s.args...)
			var o outcome
			if err != nil {
				o.res, o.detail = im.ended(err), err.Error()
				if strings.HasPrefix(o.res, "exit:") {
					// Not a WASI function: wazero's own panics on the
					// closed module's nil state.
					_, err2 := in.call("pages")
					if err2 == nil {
						o.res += "/then ok"
					} else {
						o.res += "/then " + im.ended(err2)
					}
				}
				ended = true
			} else {
				if s.fn != "proc_exit" {
					o.res = fmt.Sprint(uint32(v))
				}
				if compareMem {
					pages, _ := in.call("pages")
					h, _ := in.call("hash", 0, pages<<16)
					o.mem = h
				}
			}
			stdout, stderr := in.outputs()
			o.out = digest(stdout) + "/" + digest(stderr)
			outs[k] = o
		}
		for k := 1; k < len(impls); k++ {
			if outs[k].res == outs[0].res && outs[k].mem == outs[0].mem && outs[k].out == outs[0].out {
				continue
			}
			if knownDifference(s, outs[0], outs[k]) {
				known++
				continue
			}
			diffs++
			if diffs <= 25 {
				t.Errorf("step %d: %s%s:\n\treference: %v\n\t%s: %v", n, s.fn, fmtArgs(s.args), outs[0], impls[k].name, outs[k])
			}
		}
		if ended {
			closeAll()
		}
	}
	if diffs > 25 {
		t.Errorf("... %d differences in all", diffs)
	}
	return known
}

func fmtArgs(args []uint64) string {
	var b strings.Builder
	b.WriteString("(")
	for k, a := range args {
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%#x", a)
	}
	b.WriteString(")")
	return b.String()
}

func writeMem(in probeInstance, w write) {
	d := w.data
	addr := w.addr
	for len(d) >= 8 {
		in.call("store64", uint64(addr), le64(d))
		d, addr = d[8:], addr+8
	}
	for _, c := range d {
		in.call("store8", uint64(addr), uint64(c))
		addr++
	}
}

func le64(b []byte) uint64 {
	var v uint64
	for k := 7; k >= 0; k-- {
		v = v<<8 | uint64(b[k])
	}
	return v
}

func u32s(v ...uint32) []byte {
	var b []byte
	for _, x := range v {
		b = append(b, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
	}
	return b
}

func u64s(v ...uint64) []byte {
	var b []byte
	for _, x := range v {
		b = append(b, u32s(uint32(x), uint32(x>>32))...)
	}
	return b
}

// Memory layout of the probe for the tests.
const (
	iovsAt  = 0x100 // three iovecs: "hello\n", an empty one, "abc\n"
	subsAt  = 0x200 // four subscriptions: clock, fd_read 0, fd_write 1, fd_read 7
	pathsAt = 0x400 // paths, 16 bytes apart
	dataAt  = 0x800
	outAt   = 0x1000
)

// sub encodes a subscription: userdata, tag, then the clock (id, timeout,
// precision, flags) or the descriptor.
func clockSub(userdata uint64, id uint32, timeout uint64, flags uint16) []byte {
	b := u64s(userdata, 0)
	b[8] = 0
	b = append(b, u32s(id, 0)...)
	b = append(b, u64s(timeout, 0)...)
	return append(b, byte(flags), byte(flags>>8), 0, 0, 0, 0, 0, 0)
}

func fdSub(userdata uint64, tag byte, fd uint32) []byte {
	b := u64s(userdata, 0)
	b[8] = tag
	b = append(b, u32s(fd, 0, 0, 0, 0, 0, 0, 0)...)
	return b
}

var paths = []string{"a/b", "../x", "/abs", "\xff\xfe", "a/../b/./c//", "", ".", "a/..", "a/../..", "x/\xff/..", "//", "./a/", "..", "a/b/../../../c", "é/ü"}

// standardSetup is the memory every instance starts with.
func standardSetup() []write {
	w := []write{
		{iovsAt, u32s(dataAt, 6, dataAt+6, 0, dataAt+16, 4)},
		{dataAt, []byte("hello\n")},
		{dataAt + 16, []byte("abc\n")},
		{subsAt, cat(clockSub(0x1111, 1, 1000, 0), fdSub(0x2222, 1, 0), fdSub(0x3333, 2, 1), fdSub(0x4444, 1, 7))},
	}
	for k, p := range paths[:8] {
		w = append(w, write{pathsAt + uint32(16*k), []byte(p)})
	}
	return w
}

// Interesting values of parameters.
var (
	interesting32 = []uint64{
		0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 48, 64,
		0x100, 0x105, 0x200, 0x3ff, 0x400, 0x800, 0x1000, 0xffff, 0x10000,
		memSize - 64, memSize - 48, memSize - 32, memSize - 24, memSize - 8, memSize - 4, memSize - 3, memSize - 1,
		memSize, memSize + 1, memSize + 8,
		0x02aaaaab, 0x05555556, 0x08000000, 0x08000001, 0x20000000, 0x20000001,
		0x7fffffff, 0x80000000, 0xfffffff8, 0xfffffffc, 0xffffffff,
	}
	interesting64 = []uint64{
		0, 1, 2, 3, 5, 0xff, 1000, 1 << 31, 1 << 32, 1 << 62, math.MaxInt64, 1 << 63,
		math.MaxUint64 - 1, math.MaxUint64,
	}
)

// base is a valid call of each function.
var base = map[string][]uint64{
	"args_get":                {outAt, outAt + 0x100},
	"args_sizes_get":          {outAt, outAt + 4},
	"environ_get":             {outAt, outAt + 0x100},
	"environ_sizes_get":       {outAt, outAt + 4},
	"clock_res_get":           {0, outAt},
	"clock_time_get":          {0, 1, outAt},
	"fd_advise":               {1, 0, 0, 0},
	"fd_allocate":             {1, 0, 0},
	"fd_close":                {1},
	"fd_datasync":             {1},
	"fd_fdstat_get":           {1, outAt},
	"fd_fdstat_set_flags":     {1, 0},
	"fd_fdstat_set_rights":    {1, 0, 0},
	"fd_filestat_get":         {1, outAt},
	"fd_filestat_set_size":    {1, 0},
	"fd_filestat_set_times":   {1, 0, 0, 0},
	"fd_pread":                {0, iovsAt, 3, 0, outAt},
	"fd_prestat_get":          {3, outAt},
	"fd_prestat_dir_name":     {3, outAt, 0},
	"fd_pwrite":               {1, iovsAt, 3, 0, outAt},
	"fd_read":                 {0, iovsAt, 3, outAt},
	"fd_readdir":              {3, outAt, 0x100, 0, outAt + 0x100},
	"fd_renumber":             {1, 5},
	"fd_seek":                 {1, 0, 0, outAt},
	"fd_sync":                 {1},
	"fd_tell":                 {1, outAt},
	"fd_write":                {1, iovsAt, 3, outAt},
	"path_create_directory":   {3, pathsAt, 3},
	"path_filestat_get":       {3, 0, pathsAt, 3, outAt},
	"path_filestat_set_times": {3, 0, pathsAt, 3, 0, 0, 0},
	"path_link":               {3, 0, pathsAt, 3, 3, pathsAt + 16, 4},
	"path_open":               {3, 0, pathsAt, 3, 0, math.MaxUint64, math.MaxUint64, 0, outAt},
	"path_readlink":           {3, pathsAt, 3, outAt, 0x100, outAt + 0x100},
	"path_remove_directory":   {3, pathsAt, 3},
	"path_rename":             {3, pathsAt, 3, 3, pathsAt + 16, 4},
	"path_symlink":            {pathsAt, 3, 3, pathsAt + 16, 4},
	"path_unlink_file":        {3, pathsAt, 3},
	"poll_oneoff":             {subsAt, outAt, 1, outAt + 0x800},
	"proc_exit":               {0},
	"proc_raise":              {0},
	"sched_yield":             {},
	"random_get":              {outAt, 16},
	"sock_accept":             {3, 0, outAt},
	"sock_recv":               {3, iovsAt, 1, 0, outAt, outAt + 4},
	"sock_send":               {3, iovsAt, 1, 0, outAt},
	"sock_shutdown":           {3, 0},
}

// systematic varies each parameter of each function alone over the
// interesting values, from the function's valid call; each function starts
// on fresh instances.
func systematic() []step {
	var steps []step
	for _, f := range wasip1.Functions() {
		b, ok := base[f.Name]
		if !ok {
			panic("no base call for " + f.Name)
		}
		steps = append(steps, step{fn: f.Name, args: b, restart: true})
		for p, typ := range f.Params {
			values := interesting32
			if typ == tI64 {
				values = interesting64
			}
			if f.Name == "proc_exit" {
				values = []uint64{0, 1, 3, 255, 256, 0xffffffff}
			}
			for _, v := range values {
				args := append([]uint64(nil), b...)
				args[p] = v
				steps = append(steps, step{fn: f.Name, args: args})
			}
		}
	}
	return steps
}

// scenarios are sequences that matter beyond one parameter: state across
// calls, overlapping buffers, mixed subscriptions, wrapping sizes, partial
// effects before a fault.
func scenarios() []step {
	s := func(fn string, args ...uint64) step { return step{fn: fn, args: args} }
	w := func(st step, writes ...write) step { st.writes = writes; return st }
	restart := func(st step) step { st.restart = true; return st }
	var steps []step

	// Closing stdio, then using it.
	steps = append(steps,
		restart(s("fd_close", 1)), s("fd_write", 1, iovsAt, 3, outAt), s("fd_close", 1),
		s("fd_fdstat_get", 1, outAt), s("fd_prestat_get", 1, outAt), s("fd_renumber", 2, 1),
		s("fd_renumber", 1, 2), s("fd_renumber", 2, 0xffffffff), s("fd_renumber", 0, 2),
		s("poll_oneoff", subsAt, outAt, 4, outAt+0x800), s("fd_write", 2, iovsAt, 3, outAt),
		s("fd_close", 0), s("fd_read", 0, iovsAt, 3, outAt),
		s("poll_oneoff", subsAt, outAt, 4, outAt+0x800), // stdin closed: EBADF after the events
		s("poll_oneoff", subsAt, outAt, 3, outAt+0x800),
		s("poll_oneoff", subsAt+48, outAt, 1, outAt+0x800),
		s("fd_close", 2), s("fd_close", 2), s("path_symlink", pathsAt, 3, 2, pathsAt+16, 4),
	)
	// poll_oneoff: mixes, errors part-way, overlap.
	mix := func(subs ...[]byte) write { return write{subsAt, cat(subs...)} }
	steps = append(steps,
		restart(w(s("poll_oneoff", subsAt, outAt, 4, outAt+0x800))),
		w(s("poll_oneoff", subsAt, outAt, 3, outAt+0x800), mix(fdSub(1, 2, 1), fdSub(2, 2, 9), clockSub(3, 0, 0, 1))),
		w(s("poll_oneoff", subsAt, outAt, 3, outAt+0x800), mix(fdSub(1, 2, 1), clockSub(3, 7, 5, 2), fdSub(2, 1, 0))),
		w(s("poll_oneoff", subsAt, outAt, 3, outAt+0x800), mix(fdSub(1, 1, 2), fdSub(2, 3, 1), fdSub(3, 1, 0))),
		w(s("poll_oneoff", subsAt, outAt, 3, outAt+0x800), mix(fdSub(1, 1, 2), fdSub(2, 1, 0xffffffff), fdSub(3, 1, 0))),
		w(s("poll_oneoff", subsAt, outAt, 3, outAt+0x800), mix(fdSub(1, 1, 1), fdSub(2, 1, 0), fdSub(3, 1, 2))),
		w(s("poll_oneoff", subsAt, outAt, 2, outAt+0x800), mix(clockSub(1, 0, 1<<63, 0), clockSub(2, 1, math.MaxUint64, 0))),
		w(s("poll_oneoff", subsAt, outAt, 2, outAt+0x800), mix(fdSub(1, 2, 2), fdSub(2, 2, 3))),
		w(s("poll_oneoff", subsAt, outAt, 2, outAt+0x800), mix(fdSub(1, 0xff, 2), fdSub(2, 2, 3))),
		// in == out: the subscriptions are zeroed before they are read.
		w(s("poll_oneoff", subsAt, subsAt, 4, outAt+0x800), mix(fdSub(1, 1, 0), fdSub(2, 2, 1), fdSub(3, 1, 5), fdSub(4, 1, 0))),
		// out one event ahead of in: each event overwrites a subscription not yet read.
		w(s("poll_oneoff", subsAt+32, subsAt, 4, outAt+0x800), mix(fdSub(9, 2, 1), fdSub(1, 1, 0), fdSub(2, 2, 1), fdSub(3, 1, 5), fdSub(4, 1, 0))),
		w(s("poll_oneoff", subsAt, subsAt+16, 4, outAt+0x800), mix(fdSub(1, 1, 0), fdSub(2, 2, 1), fdSub(3, 1, 5), fdSub(4, 1, 0))),
		// nevents over the subscriptions.
		w(s("poll_oneoff", subsAt, outAt, 2, subsAt+8), mix(fdSub(1, 2, 1), fdSub(2, 2, 1))),
		w(s("poll_oneoff", subsAt, outAt, 2, subsAt+56), mix(fdSub(1, 2, 1), fdSub(2, 2, 1))),
		// Sizes that wrap in 32 bits.
		s("poll_oneoff", 0, 0, 0x08000000, outAt), s("poll_oneoff", 0, 0, 0x05555556, outAt),
		s("poll_oneoff", 0, 0, 0x02aaaaab, outAt), s("poll_oneoff", 0, 0, 0x0aaaaaab, outAt),
		s("poll_oneoff", 0, 0, 0x08000001, outAt), s("poll_oneoff", subsAt, 0, 0x08000002, outAt),
		s("poll_oneoff", 0, 0, 0xffffffff, outAt), s("poll_oneoff", 0x40, 0x40, 0x15555556, outAt),
		s("poll_oneoff", memSize, memSize, 0x08000000, outAt),
	)
	// Iovecs: a fault after a write, reads stopping at EOF, wrapping counts.
	steps = append(steps,
		restart(w(s("fd_write", 1, outAt+0x200, 3, outAt), write{outAt + 0x200, u32s(dataAt, 6, memSize, 1, dataAt, 6)})),
		w(s("fd_write", 2, outAt+0x200, 3, outAt), write{outAt + 0x200, u32s(dataAt, 6, memSize+1, 0, dataAt, 6)}),
		w(s("fd_write", 1, outAt+0x200, 2, outAt), write{outAt + 0x200, u32s(memSize, 0, dataAt, 6)}),
		w(s("fd_read", 0, outAt+0x200, 2, outAt), write{outAt + 0x200, u32s(dataAt, 6, memSize, 100)}),
		w(s("fd_read", 0, outAt+0x200, 2, outAt), write{outAt + 0x200, u32s(memSize, 100, dataAt, 6)}),
		w(s("fd_read", 0, outAt+0x200, 2, outAt), write{outAt + 0x200, u32s(memSize+5, 0, memSize, 6)}),
		w(s("fd_read", 1, outAt+0x200, 2, outAt), write{outAt + 0x200, u32s(memSize+5, 0, dataAt, 0)}),
		w(s("fd_pread", 0, outAt+0x200, 2, 7, outAt), write{outAt + 0x200, u32s(dataAt, 0, dataAt, 0)}),
		w(s("fd_pwrite", 1, outAt+0x200, 2, 7, outAt), write{outAt + 0x200, u32s(dataAt, 0, memSize+9, 0)}),
		w(s("fd_pwrite", 1, outAt+0x200, 2, 7, outAt), write{outAt + 0x200, u32s(dataAt, 0, memSize, 0)}),
		w(s("fd_write", 0, outAt+0x200, 1, outAt), write{outAt + 0x200, u32s(dataAt, 0)}),
		s("fd_write", 1, iovsAt, 0x20000000, outAt), s("fd_write", 1, iovsAt, 0x20000001, outAt),
		s("fd_write", 1, iovsAt, 0x20000003, outAt), s("fd_read", 0, iovsAt, 0x20000003, outAt),
		s("sock_send", 1, iovsAt, 1, 0, outAt), s("sock_recv", 0, iovsAt, 1, 1, outAt, outAt+4),
		// The result over the iovecs.
		s("fd_write", 1, iovsAt, 3, iovsAt), s("fd_write", 1, iovsAt, 3, iovsAt), s("fd_read", 0, iovsAt, 1, iovsAt+4),
	)
	// Environment and arguments into overlapping and edge ranges.
	steps = append(steps,
		restart(s("environ_get", outAt, outAt)), s("environ_get", outAt, outAt+2), s("environ_get", outAt+2, outAt),
		s("environ_get", memSize-4, memSize-8), s("environ_get", memSize-8, memSize-8), s("environ_get", memSize-3, 0),
		s("environ_sizes_get", outAt, outAt), s("environ_sizes_get", outAt, memSize-2),
		s("args_get", memSize, memSize), s("args_get", memSize+1, 0), s("args_sizes_get", outAt, memSize),
	)
	// Clocks: fake readings advance per read, even when the result faults.
	for id := uint64(0); id < 5; id++ {
		steps = append(steps, s("clock_time_get", id, 0, outAt), s("clock_time_get", id, 0, memSize), s("clock_time_get", id, 0, outAt),
			s("clock_res_get", id, outAt), s("clock_res_get", id, memSize-7))
	}
	// *_set_times flags, which read the fake wall clock for "now".
	for flags := uint64(0); flags < 18; flags++ {
		steps = append(steps, s("path_filestat_set_times", 3, 0, pathsAt, 3, 0, 0, flags),
			s("fd_filestat_set_times", 1, 0, 0, flags), s("fd_filestat_set_times", 9, 0, 0, flags),
			s("clock_time_get", 0, 0, outAt))
	}
	// Random: the fake stream across calls of different sizes.
	steps = append(steps, restart(s("random_get", outAt, 1)), s("random_get", outAt, 7), s("random_get", outAt, 13),
		s("random_get", outAt, 4096), s("random_get", 0, memSize), s("random_get", 1, memSize), s("random_get", outAt, 5))
	// Paths.
	for k, p := range paths {
		addr := uint64(outAt + 0x400)
		wr := write{uint32(addr), []byte(p)}
		for _, fd := range []uint64{3, 1, 0xffffffff} {
			steps = append(steps, w(s("path_open", fd, 0, addr, uint64(len(p)), 0, math.MaxUint64, 0, 0, outAt), wr))
		}
		steps = append(steps, w(s("path_readlink", 2, addr, uint64(len(p)), outAt, 1, outAt), wr))
		if k == 0 {
			steps[len(steps)-1].restart = true
		}
	}
	long := bytes.Repeat([]byte("ab/"), 20000)
	steps = append(steps,
		w(s("path_open", 1, 0, dataAt, uint64(len(long)), 0, 0, 0, 0, outAt), write{dataAt, long}),
		w(s("path_open", 1, 0, dataAt, uint64(len(long)), 0, 0, 0, 0, outAt), write{dataAt + 30000, []byte("/../../\xff")}),
	)
	// Exit, and what a call after it does.
	steps = append(steps, restart(s("proc_exit", 3)), s("sched_yield"), s("proc_exit", 0), s("proc_raise", 9))
	return steps
}

// randomSteps are random calls of random functions with parameters drawn
// from the interesting values and from addresses into the first 8 KiB, on
// instances whose first 8 KiB are random words of the same kinds.
func randomSteps(r *rand.Rand, n int) ([]step, []write) {
	fns := wasip1.Functions()
	var region []byte
	for len(region) < 0x2000 {
		var v uint32
		switch r.IntN(4) {
		case 0:
			v = uint32(interesting32[r.IntN(len(interesting32))])
		case 1:
			v = uint32(r.IntN(0x2000))
		case 2:
			v = uint32(r.IntN(4))
		default:
			v = r.Uint32()
		}
		region = append(region, u32s(v)...)
	}
	setup := []write{{0, region}}
	var steps []step
	for k := 0; k < n; k++ {
		f := fns[r.IntN(len(fns))]
		if f.Name == "proc_exit" && r.IntN(4) != 0 {
			continue
		}
		args := make([]uint64, len(f.Params))
		for p, typ := range f.Params {
			switch {
			case typ == tI64:
				args[p] = interesting64[r.IntN(len(interesting64))]
			case r.IntN(2) == 0:
				args[p] = uint64(r.IntN(0x2000)) &^ uint64(r.IntN(2)*7)
			default:
				args[p] = interesting32[r.IntN(len(interesting32))]
			}
		}
		steps = append(steps, step{fn: f.Name, args: args, restart: k%50 == 0})
	}
	return steps, setup
}

func implsFor(t *testing.T) []impl {
	impls := []impl{reference(t)}
	for _, e := range engines {
		impls = append(impls, onEngine(t, e, probe()))
	}
	return impls
}

func TestDifferential(t *testing.T) {
	impls := implsFor(t)
	t.Run("systematic", func(t *testing.T) {
		known := lockstep(t, impls, systematic(), false, false, true, standardSetup())
		t.Logf("%d known differences", known)
	})
	t.Run("scenarios", func(t *testing.T) {
		known := lockstep(t, impls, scenarios(), false, false, true, standardSetup())
		t.Logf("%d known differences", known)
	})
	t.Run("random", func(t *testing.T) {
		n := 3000
		if testing.Short() {
			n = 500
		}
		steps, setup := randomSteps(rand.New(rand.NewPCG(1, 2)), n)
		known := lockstep(t, impls, steps, false, false, true, append(standardSetup(), setup...))
		t.Logf("%d known differences", known)
	})
	// With the clock and random granted, the values differ from run to
	// run; the errnos and what reaches stdout may not.
	t.Run("granted", func(t *testing.T) {
		s := func(fn string, args ...uint64) step { return step{fn: fn, args: args} }
		var steps []step
		for id := uint64(0); id < 5; id++ {
			steps = append(steps, s("clock_time_get", id, 0, outAt), s("clock_time_get", id, 0, memSize), s("clock_res_get", id, outAt))
		}
		steps = append(steps,
			s("poll_oneoff", subsAt, outAt, 1, outAt+0x800), // 1 µs
			s("poll_oneoff", subsAt, outAt, 4, outAt+0x800), // stdin answers at once
			s("fd_filestat_set_times", 3, 0, 0, 2), s("path_filestat_set_times", 3, 0, pathsAt, 3, 0, 0, 10),
			// Last: real random bytes make the memories differ.
			s("random_get", outAt, 4096), s("random_get", 0, memSize), s("random_get", 1, memSize))
		lockstep(t, impls, steps, true, true, false, standardSetup())
	})
}
