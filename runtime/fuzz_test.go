package runtime_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/hostmodule"
	"github.com/wasmprov/wasmprov/internal/hostmodule/wazerohost"
)

type noResolver struct{}

func (noResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no such host", IsNotFound: true}
}

// FuzzHostFunctionArgs passes arbitrary pointers, lengths and memory
// contents to every wasmprov_v1 host function from inside a real instance
// (the trampolines fixture). The host must never panic, every result must
// be a length or a defined errno, and a range outside linear memory must be
// INVALID whatever else is wrong (abi/SPEC.md §6.4).
func FuzzHostFunctionArgs(f *testing.F) {
	f.Add(uint8(0), uint32(1), uint32(0), uint32(100), uint32(0), int64(0), []byte(nil))
	f.Add(uint8(5), uint32(0), uint32(60), uint32(100), uint32(200), int64(0),
		[]byte(`{"method":"GET","url":"https://api.example.com/"}`))
	f.Add(uint8(8), uint32(0), uint32(31), uint32(0), uint32(64), int64(0), []byte(`{"type":"string","var":"hello"}`))
	f.Add(uint8(6), uint32(0), uint32(20), uint32(10), uint32(5), int64(0), []byte(`{"addFinalizers":["x"]}`))
	f.Add(uint8(3), uint32(0xfffffff0), uint32(100), uint32(0), uint32(1), int64(-1), []byte(nil))
	f.Add(uint8(2), uint32(0xffff), uint32(2), uint32(0), uint32(0), int64(0), []byte(nil))

	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	f.Cleanup(func() { r.Close(ctx) })
	if _, err := wazerohost.Instantiate(ctx, r); err != nil {
		f.Fatal(err)
	}
	mod, err := r.Instantiate(ctx, maliciousFixture(f, "trampolines"))
	if err != nil {
		f.Fatal(err)
	}
	names := []string{abi.ImportInput, abi.ImportTakeResult, abi.ImportOutput, abi.ImportSetError, abi.ImportLog,
		abi.ImportHTTP, abi.ImportMachineUpdate, abi.ImportPVList, abi.ImportConfigVar}
	fns := map[string]api.Function{}
	for _, n := range names {
		fns[n] = mod.ExportedFunction(n)
	}
	env := &hostmodule.Env{
		Provider: "fuzz",
		Logger:   slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug})),
		HTTP:     hostmodule.NewHTTP(hostmodule.HTTPPolicy{AllowedHosts: []string{"api.example.com"}, Resolver: noResolver{}, Timeout: 50 * time.Millisecond}),
	}
	f.Cleanup(env.Close)
	machine := testMachine()
	f.Fuzz(func(t *testing.T, which uint8, a, b, c, d uint32, e int64, mem []byte) {
		name := names[int(which)%len(names)]
		call := hostmodule.NewCall(ctx, env, abi.MethodCreate, abi.AllCapabilities)
		call.Machine = machine.DeepCopy()
		call.Data = &hostmodule.Data{Update: func(m *clusterv1alpha1.Machine, modify func(*clusterv1alpha1.Machine)) (*clusterv1alpha1.Machine, error) {
			m = m.DeepCopy()
			modify(m)
			return m, nil
		}}
		mod.Memory().Write(0, mem[:min(len(mem), 65536)])
		var params []uint64
		switch name {
		case abi.ImportInput:
			params = []uint64{uint64(a), uint64(b), uint64(c)}
		case abi.ImportTakeResult, abi.ImportOutput:
			params = []uint64{uint64(a), uint64(b)}
		case abi.ImportSetError:
			params = []uint64{uint64(a), uint64(b), uint64(c), uint64(d), uint64(e)}
		case abi.ImportLog:
			params = []uint64{uint64(int32(e)), uint64(a), uint64(b), uint64(c), uint64(d)}
		default:
			params = []uint64{uint64(a), uint64(b), uint64(c), uint64(d)}
		}
		res, err := fns[name].Call(hostmodule.WithCall(ctx, call), params...)
		if err != nil {
			t.Fatalf("%s%v: %v", name, params, err)
		}
		var v int64
		switch name {
		case abi.ImportOutput, abi.ImportSetError, abi.ImportLog:
			v = int64(int32(uint32(res[0])))
		default:
			v = int64(res[0])
		}
		if v < int64(abi.ErrnoNotFound) {
			t.Fatalf("%s%v returned %d, not a length or an errno", name, params, v)
		}
		size := uint64(mod.Memory().Size())
		out := func(p, n uint32) bool { return uint64(p)+uint64(n) > size }
		var oob bool
		switch name {
		case abi.ImportInput:
			oob = out(b, c)
		case abi.ImportTakeResult, abi.ImportOutput:
			oob = out(a, b)
		default:
			oob = out(a, b) || out(c, d)
		}
		if oob && v != int64(abi.ErrnoInvalid) {
			t.Fatalf("%s%v with a range outside its %d-byte memory returned %d, want INVALID", name, params, size, v)
		}
		if v >= 0 && name != abi.ImportOutput && name != abi.ImportSetError && name != abi.ImportLog && v > 64<<20 {
			t.Fatalf("%s returned an implausible length %d", name, v)
		}
	})
}

func maliciousFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := readFile("testdata/malicious/" + name + ".wasm")
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
