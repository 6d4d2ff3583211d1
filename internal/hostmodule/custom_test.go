package hostmodule

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/hostfuncs"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// customCall binds f into a table and returns its binding, a Call for a
// Create of Machine ns/m (uid u) granting capability granted, and the
// log the host wrote.
func customCall(t *testing.T, f hostfuncs.Function, granted string, limits Limits) (Function, *Call, *bytes.Buffer) {
	t.Helper()
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	var bound Function
	for _, fn := range Table([]hostfuncs.Function{f}) {
		if fn.Module == f.Module && fn.Name == f.Name {
			bound = fn
		}
	}
	if bound.Fn == nil {
		t.Fatalf("Table has no %s.%s", f.Module, f.Name)
	}
	var logs bytes.Buffer
	env := &Env{Provider: "p", Logger: slog.New(slog.NewTextHandler(&logs, nil)), Limits: limits,
		CustomGranted: map[string]bool{granted: true}}
	c := NewCall(context.Background(), env, abi.MethodCreate, abi.CapLog)
	c.Machine = &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", UID: "u"}}
	return bound, c, &logs
}

// callGuest calls fn as a guest would with req at offset 0 and a result
// buffer after it; it returns the i64 answer and the result or message
// the guest can read.
func callGuest(c *Call, fn Function, req []byte) (int64, string) {
	mem := &flatMemory{b: make([]byte, 64<<10)}
	copy(mem.b, req)
	const buf, limit = 32 << 10, 1 << 10
	stack := []uint64{0, uint64(len(req)), buf, limit}
	fn.Fn(WithCall(context.Background(), c), mem, stack)
	n := int64(stack[0])
	switch {
	case n < 0 || n > limit:
		return n, string(c.pending)
	default:
		return n, string(mem.b[buf : buf+n])
	}
}

func echo(ctx context.Context, req hostfuncs.Request) ([]byte, error) {
	return []byte(req.Method + " " + req.Machine.Namespace + "/" + req.Machine.Name + " " + req.Machine.UID + " " + string(req.Body)), nil
}

func TestCustomFunctionAnswers(t *testing.T) {
	f := hostfuncs.Function{Module: "example_v1", Name: "echo", Capability: "example.com/echo", Handler: echo}
	fn, c, _ := customCall(t, f, f.Capability, Limits{})
	n, got := callGuest(c, fn, []byte("hello"))
	if want := "Create ns/m u hello"; n != int64(len(want)) || got != want {
		t.Fatalf("answer %d %q, want %q", n, got, want)
	}
	// A result over the guest's buffer waits for take_result, as a built-in's.
	big := hostfuncs.Function{Module: "example_v1", Name: "big", Capability: "example.com/echo",
		Handler: func(context.Context, hostfuncs.Request) ([]byte, error) { return bytes.Repeat([]byte("x"), 5000), nil }}
	fn, c, _ = customCall(t, big, big.Capability, Limits{})
	if n, _ := callGuest(c, fn, nil); n != 5000 || len(c.pending) != 5000 {
		t.Fatalf("a 5000-byte result: answer %d, pending %d", n, len(c.pending))
	}
}

// Every check a built-in data function gets, a custom one gets, before
// its handler runs; none can be configured away.
func TestCustomFunctionChecks(t *testing.T) {
	var ran atomic.Int64
	counting := func(ctx context.Context, req hostfuncs.Request) ([]byte, error) {
		ran.Add(1)
		return []byte("ok"), nil
	}
	f := hostfuncs.Function{Module: "example_v1", Name: "f", Capability: "example.com/f",
		MaxUsesPerCall: 2, MaxRequestBytes: 16, MaxResultBytes: 8, Handler: counting}

	t.Run("not granted", func(t *testing.T) {
		ran.Store(0)
		fn, c, logs := customCall(t, f, "example.com/other", Limits{})
		if n, msg := callGuest(c, fn, nil); n != int64(abi.ErrnoNotDeclared) || !strings.Contains(msg, `"example.com/f"`) {
			t.Fatalf("answer %d %q, want NOT_DECLARED naming the capability", n, msg)
		}
		if ran.Load() != 0 || !strings.Contains(logs.String(), "not granted") {
			t.Fatalf("handler ran %d times; log %q", ran.Load(), logs)
		}
	})
	t.Run("request over its limit", func(t *testing.T) {
		ran.Store(0)
		fn, c, _ := customCall(t, f, f.Capability, Limits{})
		if n, msg := callGuest(c, fn, make([]byte, 17)); n != int64(abi.ErrnoTooLarge) || !strings.Contains(msg, "limit of 16") {
			t.Fatalf("answer %d %q, want TOO_LARGE", n, msg)
		}
		// The policy's request limit caps a larger MaxRequestBytes.
		g := f
		g.MaxRequestBytes = 1 << 20
		fn, c, _ = customCall(t, g, g.Capability, Limits{MaxRequestBytes: 10})
		if n, _ := callGuest(c, fn, make([]byte, 11)); n != int64(abi.ErrnoTooLarge) {
			t.Fatalf("answer %d, want TOO_LARGE past the policy's limit", n)
		}
		if ran.Load() != 0 {
			t.Fatalf("handler ran %d times", ran.Load())
		}
	})
	t.Run("byte budget", func(t *testing.T) {
		ran.Store(0)
		fn, c, _ := customCall(t, f, f.Capability, Limits{MaxBytesPerCall: 20})
		if n, _ := callGuest(c, fn, make([]byte, 12)); n != 2 {
			t.Fatalf("first request answered %d", n)
		}
		if n, msg := callGuest(c, fn, make([]byte, 12)); n != int64(abi.ErrnoTooLarge) || !strings.Contains(msg, "per call") {
			t.Fatalf("answer %d %q, want TOO_LARGE past the call's byte budget", n, msg)
		}
		if ran.Load() != 1 {
			t.Fatalf("handler ran %d times, want 1", ran.Load())
		}
	})
	t.Run("uses per call", func(t *testing.T) {
		ran.Store(0)
		fn, c, logs := customCall(t, f, f.Capability, Limits{})
		for i := range 4 {
			n, _ := callGuest(c, fn, nil)
			if ok := n == 2; ok != (i < 2) {
				t.Fatalf("use %d answered %d", i+1, n)
			}
		}
		if ran.Load() != 2 || strings.Count(logs.String(), "exceeded a host function's limit") != 1 {
			t.Fatalf("handler ran %d times; log %q", ran.Load(), logs)
		}
	})
	t.Run("result over its limit", func(t *testing.T) {
		g := f
		g.Handler = func(context.Context, hostfuncs.Request) ([]byte, error) { return make([]byte, 9), nil }
		fn, c, logs := customCall(t, g, g.Capability, Limits{})
		if n, _ := callGuest(c, fn, nil); n != int64(abi.ErrnoTooLarge) || !strings.Contains(logs.String(), "MaxResultBytes") {
			t.Fatalf("answer %d; log %q", n, logs)
		}
	})
	t.Run("out-of-bounds request", func(t *testing.T) {
		ran.Store(0)
		fn, c, _ := customCall(t, f, f.Capability, Limits{})
		mem := &flatMemory{b: make([]byte, 100)}
		stack := []uint64{90, 20, 0, 10}
		fn.Fn(WithCall(context.Background(), c), mem, stack)
		if int64(stack[0]) != int64(abi.ErrnoInvalid) || ran.Load() != 0 {
			t.Fatalf("answer %d, handler ran %d times", int64(stack[0]), ran.Load())
		}
	})
}

func TestCustomFunctionErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		errno abi.Errno
		msg   string
	}{
		{"chosen errno", hostfuncs.Errorf(abi.ErrnoNotFound, "no such lease"), abi.ErrnoNotFound, "no such lease"},
		{"plain error", errors.New("backend down"), abi.ErrnoFailed, "backend down"},
		{"the host's errno", hostfuncs.Errorf(abi.ErrnoNotDeclared, "forged"), abi.ErrnoFailed, "forged"},
		{"undefined errno", &hostfuncs.Error{Errno: -99, Message: "odd"}, abi.ErrnoFailed, "odd"},
		{"unprintable message", errors.New("a\x1b[2Jb"), abi.ErrnoFailed, "a\uFFFD[2Jb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := hostfuncs.Function{Module: "example_v1", Name: "f", Capability: "example.com/f",
				Handler: func(context.Context, hostfuncs.Request) ([]byte, error) { return nil, tc.err }}
			fn, c, _ := customCall(t, f, f.Capability, Limits{})
			n, msg := callGuest(c, fn, nil)
			if n != int64(tc.errno) || !strings.Contains(msg, tc.msg) {
				t.Fatalf("answer %d %q, want %d containing %q", n, msg, tc.errno, tc.msg)
			}
		})
	}
	t.Run("panic", func(t *testing.T) {
		f := hostfuncs.Function{Module: "example_v1", Name: "f", Capability: "example.com/f",
			Handler: func(context.Context, hostfuncs.Request) ([]byte, error) { panic("embedder bug") }}
		fn, c, logs := customCall(t, f, f.Capability, Limits{})
		n, msg := callGuest(c, fn, nil)
		if n != int64(abi.ErrnoFailed) || strings.Contains(msg, "embedder bug") {
			t.Fatalf("answer %d %q: want FAILED without the panic's text", n, msg)
		}
		if !strings.Contains(logs.String(), "embedder bug") {
			t.Fatalf("the panic is not in the host's log: %q", logs)
		}
	})
}

// A handler that ignores its context does not hold the guest past the
// call's deadline: the guest gets FAILED when the deadline passes.
func TestCustomFunctionDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	entered := make(chan struct{})
	f := hostfuncs.Function{Module: "example_v1", Name: "stuck", Capability: "example.com/f",
		Handler: func(context.Context, hostfuncs.Request) ([]byte, error) {
			close(entered)
			<-release
			return []byte("late"), nil
		}}
	fn, c, logs := customCall(t, f, f.Capability, Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	SetContext(c, ctx)
	answered := make(chan int64, 1)
	go func() {
		n, _ := callGuest(c, fn, nil)
		answered <- n
	}()
	<-entered
	select {
	case n := <-answered:
		t.Fatalf("answered %d while the handler runs, before the deadline", n)
	default:
	}
	cancel() // the call's deadline, as the runtime's context ends it
	if n := <-answered; n != int64(abi.ErrnoFailed) {
		t.Fatalf("answer %d, want FAILED", n)
	}
	if !strings.Contains(logs.String(), "did not return before the call's deadline") {
		t.Fatalf("log %q", logs)
	}
}
