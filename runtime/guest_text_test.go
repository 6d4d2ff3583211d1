package runtime_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/cloud"
	"github.com/wasmprov/wasmprov/runtime"
)

// nulFlooder is a guest whose Get logs 64 KiB of NUL bytes (its memory is
// zeros) until log answers TOO_LARGE, then reports an error whose message
// is 64 KiB of NULs: the text that grows three-fold when made printable.
func nulFlooder() []byte {
	const k64 = 65536
	body := []byte{opLoop, opBlockEmpty,
		opI32Const, 0, opI32Const, 0, opI32Const}
	body = append(body, sleb(k64)...)
	body = append(body, opI32Const, 0, opI32Const, 0, opCall, 0, // log(0, 0, 64 KiB, 0, 0)
		opI32Const)
	body = append(body, sleb(int64(abi.ErrnoTooLarge))...)
	body = append(body, opI32Ne, opBrIf, 0, opEnd,
		opI32Const, 0, opI32Const, 0, opI32Const, 0, opI32Const)
	body = append(body, sleb(k64)...)
	body = append(body, opI64Const, 0, opCall, 1, opDrop, // set_error("", 64 KiB of NULs, 0)
		opI32Const, byte(abi.StatusError))
	m := providerModule(uint64(abi.CapLog), map[string][]byte{abi.MethodGet.Export(): body},
		genImport{abi.ModuleName, abi.ImportLog, []byte{valI32, valI32, valI32, valI32, valI32}, []byte{valI32}},
		genImport{abi.ModuleName, abi.ImportSetError, []byte{valI32, valI32, valI32, valI32, valI64}, []byte{valI32}})
	m.pages = 2
	return m.bytes()
}

const opI32Ne = 0x47

// Guest text is bounded as it reaches the log and the Machine, on every
// engine: a guest logging NUL bytes put 3 MiB into the log against the
// 1 MiB per-call quota, and its 64 KiB error message became 192 KiB of
// status text.
func TestGuestTextBoundAsWritten(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	rt := newRuntime(t, runtime.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	p, err := rt.LoadBytes(ctx, "nuls", nulFlooder())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	buf.Reset() // the load's own records
	_, err = cloud.SeedProvider(p, nil).Get(newMachine("m", "u", map[string]any{}))
	if err == nil {
		t.Fatal("Get succeeded; the guest reports an error")
	}
	t.Logf("%d bytes of log, an error of %d bytes", buf.Len(), len(err.Error()))
	const quota, slack = 1 << 20, 16 << 10 // the host's fields of a few records
	if buf.Len() > quota+slack {
		t.Errorf("the guest put %d bytes into the log: the per-call quota is %d", buf.Len(), quota)
	}
	if bytes.Contains(buf.Bytes(), []byte(`\u0000`)) {
		t.Errorf("NUL bytes reached the log")
	}
	if n := len(err.Error()); n > 64<<10+256 {
		t.Errorf("the error message is %d bytes: the cap is 64 KiB", n)
	}
}
