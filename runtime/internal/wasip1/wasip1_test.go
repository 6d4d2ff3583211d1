package wasip1

import (
	"bytes"
	"context"
	"io/fs"
	"math/rand"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/runtime/internal/engine"
)

// sliceMemory is a Memory over a byte slice.
type sliceMemory []byte

func (m sliceMemory) Read(off, n uint32) ([]byte, bool) {
	end := uint64(off) + uint64(n)
	if end > uint64(len(m)) {
		return nil, false
	}
	return m[off:end:end], true
}

func (m sliceMemory) Write(off uint32, v []byte) bool {
	b, ok := m.Read(off, uint32(len(v)))
	if ok {
		copy(b, v)
	}
	return ok
}

func newState(t testing.TB, cfg engine.InstanceConfig) *State {
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validPath must be wazero's test, fs.ValidPath(path.Clean(p)).
func FuzzValidPath(f *testing.F) {
	for _, p := range []string{"", ".", "..", "/", "a", "a/b", "a/../..", "../a", "a/..", "x/\xff/..", "\xff",
		"a//b/", "./a", "a/./b/../../c", "é", "\xc3", "\xc3/", "a/\xe2\x82", "...", "a/...", ".a/..b", "//a", "a\x00b"} {
		f.Add(p)
	}
	s := newState(f, engine.InstanceConfig{})
	f.Fuzz(func(t *testing.T, p string) {
		want := fs.ValidPath(path.Clean(p))
		if got := s.validPath([]byte(p)); got != want {
			t.Fatalf("validPath(%q) = %v, want %v (Clean: %q)", p, got, want, path.Clean(p))
		}
	})
}

// TestValidPathLarge: the chunked UTF-8 check agrees with utf8 on inputs
// larger than a chunk, with multi-byte runes across chunk boundaries.
func TestValidPathLarge(t *testing.T) {
	s := newState(t, engine.InstanceConfig{})
	r := rand.New(rand.NewSource(1))
	pieces := []string{"a", "é", "€", "😀", "/", "\xff", "\xc3", "..", "."}
	for k := 0; k < 40; k++ {
		var b strings.Builder
		for b.Len() < 3*checkEvery*256+r.Intn(1000) {
			p := pieces[r.Intn(len(pieces))]
			if (p == "\xff" || p == "\xc3") && r.Intn(50) != 0 {
				p = "é"
			}
			b.WriteString(p)
		}
		p := b.String()
		if got, want := s.validPath([]byte(p)), fs.ValidPath(path.Clean(p)); got != want {
			t.Fatalf("case %d: validPath = %v, want %v", k, got, want)
		}
	}
	long := strings.Repeat("é", 3*checkEvery*256/2)
	if !s.validPath([]byte(long)) {
		t.Fatal("a long valid element refused")
	}
}

// wazeroSeed seeds wazero's default random source (math/rand).
const wazeroSeed = 42

// TestRandomStream: random_get in chunks reads the same stream as
// wazero's single read, whatever the sizes of the calls (shown with a
// fixed stream).
func TestRandomStream(t *testing.T) {
	s := newState(t, engine.InstanceConfig{Random: rand.New(rand.NewSource(wazeroSeed))})
	mem := make(sliceMemory, 3*randomChunk+100)
	sizes := []uint32{1, 7, 3*randomChunk + 5, 13}
	var got []byte
	for _, n := range sizes {
		if errno := s.randomGet(mem, 0, n); errno != ESUCCESS {
			t.Fatal(errno)
		}
		got = append(got, mem[:n]...)
	}
	// wazero reads each call's buffer with one Read.
	ref := rand.New(rand.NewSource(wazeroSeed))
	var want []byte
	for _, n := range sizes {
		b := make([]byte, n)
		ref.Read(b)
		want = append(want, b...)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the random stream differs from math/rand's with seed 42")
	}
}

// TestRandomIsNeverFixed: without a source given (the host never gives
// one), random_get reads crypto/rand, whatever the capabilities: two
// instances draw different bytes, and neither draws wazero's fixed
// stream. With a fixed stream, every instance of a provider generated the
// same "random" SSH key.
func TestRandomIsNeverFixed(t *testing.T) {
	draw := func() []byte {
		s := newState(t, engine.InstanceConfig{})
		mem := make(sliceMemory, 64)
		if errno := s.randomGet(mem, 0, 64); errno != ESUCCESS {
			t.Fatal(errno)
		}
		return mem
	}
	a, b := draw(), draw()
	fixed := make([]byte, 64)
	rand.New(rand.NewSource(wazeroSeed)).Read(fixed)
	if bytes.Equal(a, b) || bytes.Equal(a, fixed) {
		t.Fatalf("random_get is predictable: %x, %x (the fixed stream: %x)", a, b, fixed)
	}
}

// TestSleep: without the clock, poll_oneoff's sleep returns at once; with
// it, it sleeps, and ends the call (ErrInterrupted) when the instance is
// interrupted or the call's context ends.
func TestSleep(t *testing.T) {
	ended := func(f func()) (err any) {
		defer func() { err = recover() }()
		f()
		return nil
	}
	fake := newState(t, engine.InstanceConfig{})
	start := time.Now()
	fake.sleep(context.Background(), time.Hour)
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("a sleep without the clock took %v", d)
	}

	real := newState(t, engine.InstanceConfig{Clock: true})
	start = time.Now()
	real.sleep(context.Background(), 20*time.Millisecond)
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("a 20ms sleep took %v", d)
	}

	time.AfterFunc(50*time.Millisecond, real.Interrupt)
	start = time.Now()
	if r := ended(func() { real.sleep(context.Background(), time.Hour) }); r != ErrInterrupted {
		t.Errorf("interrupted sleep ended with %v", r)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the interrupted sleep took %v", d)
	}
	if r := ended(func() { real.sleep(context.Background(), time.Hour) }); r != ErrInterrupted {
		t.Errorf("a sleep on an interrupted instance ended with %v", r)
	}

	real = newState(t, engine.InstanceConfig{Clock: true})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if r := ended(func() { real.sleep(ctx, time.Hour) }); r != ErrInterrupted {
		t.Errorf("sleep past the context ended with %v", r)
	}
}

// TestLongCallsStopOnInterrupt: work proportional to the guest's memory
// (iovecs, subscriptions, random bytes, path bytes) stops once the
// instance is interrupted.
func TestLongCallsStopOnInterrupt(t *testing.T) {
	// A fresh memory for each call (random_get would scramble the others'
	// iovecs): subscriptions of fd_write to stdout, which read as empty
	// iovecs too.
	newMem := func() sliceMemory {
		mem := make(sliceMemory, 64<<20)
		for i := range 1 << 20 {
			sub := mem[i*48:]
			sub[8] = eventFdWrite
			sub[16] = 1
		}
		return mem
	}
	calls := map[string]func(s *State){
		"fd_write":    func(s *State) { s.fdWrite(newMem(), 1, 0, 8<<20, 0, false) },
		"fd_read":     func(s *State) { s.fdRead(newMem(), 0, 0, 8<<20, 0, false) },
		"poll_oneoff": func(s *State) { s.pollOneoff(context.Background(), newMem(), 0, 24<<20, 1<<19, 60<<20) },
		"random_get":  func(s *State) { s.randomGet(newMem(), 0, 64<<20) },
		"path_open":   func(s *State) { s.atPath(newMem(), 3, 0, 32<<20) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			s := newState(t, engine.InstanceConfig{})
			s.Interrupt()
			defer func() {
				if r := recover(); r != ErrInterrupted {
					t.Fatalf("ended with %v, want ErrInterrupted", r)
				}
			}()
			call(s)
			t.Fatal("the call ran to its end on an interrupted instance")
		})
	}
}

func TestNewRefusesBadEnvironment(t *testing.T) {
	for _, env := range []string{"=x", "", "A=b\x00c"} {
		if _, err := New(engine.InstanceConfig{Env: []string{env}}); err == nil {
			t.Errorf("environment %q accepted", env)
		}
	}
	s := newState(t, engine.InstanceConfig{Env: []string{"GOGC=50", "A", "B=c=d"}})
	if got := string(bytes.Join(s.env, []byte(" "))); got != "GOGC=50 A= B=c=d" || s.envSize != 8+3+6 {
		t.Fatalf("environment %q size %d", got, s.envSize)
	}
}
