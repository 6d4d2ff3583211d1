package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wasmprov/wasmprov/abi"
	"github.com/wasmprov/wasmprov/cloud"
	cloudprovidererrors "github.com/wasmprov/wasmprov/cloud/errors"
	"github.com/wasmprov/wasmprov/runtime"
)

// reporter is a guest whose Get calls set_error with the reason at 0, the
// message at 256 and retryMillis, optionally outputs the document at 512,
// and returns status.
func reporter(reason, doc string, retryMillis int64, status abi.Status) []byte {
	body := []byte{
		opI32Const, 0, opI32Const}
	body = append(body, sleb(int64(len(reason)))...)
	body = append(body, opI32Const, 0x80, 0x02, opI32Const, 4, opI64Const) // message "msg\x1b" at 256
	body = append(body, sleb(retryMillis)...)
	body = append(body, opCall, 0, opDrop)
	if doc != "" {
		body = append(body, opI32Const, 0x80, 0x04, opI32Const) // output(512, len)
		body = append(body, sleb(int64(len(doc)))...)
		body = append(body, opCall, 1, opDrop)
	}
	body = append(body, opI32Const)
	body = append(body, sleb(int64(status))...)
	m := providerModule(0, map[string][]byte{abi.MethodGet.Export(): body},
		genImport{abi.ModuleName, abi.ImportSetError, []byte{valI32, valI32, valI32, valI32, valI64}, i32x1},
		genImport{abi.ModuleName, abi.ImportOutput, i32x2, i32x1})
	data := make([]byte, 512+len(doc))
	copy(data, reason)
	copy(data[256:], "msg\x1b")
	copy(data[512:], doc)
	m.extra = map[byte][]byte{11: dataSection(0, data)}
	return m.bytes()
}

// A guest cannot make the controller retry in a hot loop, write an
// arbitrary reason into a Machine's status, or hand the controller node
// addresses of types Kubernetes does not have (red-team findings 10, 11).
func TestForgedResults(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	m := newMachine("m", "u", map[string]any{})
	call := func(t *testing.T, wasm []byte) (*runtime.Provider, error) {
		t.Helper()
		p, err := rt.LoadBytes(ctx, "forger", wasm)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close(ctx) })
		_, err = cloud.SeedProvider(p, nil).Get(m)
		return p, err
	}

	t.Run("retry_after_ms of 584 years", func(t *testing.T) {
		_, err := call(t, reporter("", "", 18446744073710, abi.StatusError))
		after, ok := cloudprovidererrors.RetryAfter(err)
		if !ok || after != time.Hour {
			t.Fatalf("retry after %v (%v), want clamped to 1h: %v", after, ok, err)
		}
	})
	t.Run("retry_after_ms of a day", func(t *testing.T) {
		_, err := call(t, reporter("", "", 86400000, abi.StatusError))
		if after, _ := cloudprovidererrors.RetryAfter(err); after != time.Hour {
			t.Fatalf("retry after %v, want 1h", after)
		}
	})
	t.Run("retry_after_ms of 1.5 s", func(t *testing.T) {
		_, err := call(t, reporter("", "", 1500, abi.StatusError))
		if after, _ := cloudprovidererrors.RetryAfter(err); after != 1500*time.Millisecond {
			t.Fatalf("retry after %v, want 1.5s", after)
		}
	})
	for _, reason := range []string{"Pwned-Reason", "", "invalidconfiguration"} {
		t.Run("terminal reason "+reason, func(t *testing.T) {
			p, err := call(t, reporter(reason, "", 0, abi.StatusTerminal))
			expectCallError(t, err, runtime.ClassBadResult, runtime.ErrBadResult, "not one of machine-controller's MachineStatusError values")
			if ok, _, _ := cloudprovidererrors.IsTerminalError(err); ok {
				t.Error("a forged reason became a terminal error")
			}
			expectPool(t, p, 1) // a lying instance is discarded
		})
	}
	t.Run("terminal reason InsufficientResources", func(t *testing.T) {
		_, err := call(t, reporter("InsufficientResources", "", 0, abi.StatusTerminal))
		if ok, reason, _ := cloudprovidererrors.IsTerminalError(err); !ok || reason != "InsufficientResources" {
			t.Fatalf("a valid terminal error was refused: %v", err)
		}
	})
	t.Run("address type bogus", func(t *testing.T) {
		doc := `{"name":"m","id":"1","status":"running","addresses":{"10.0.0.1":"bogus"}}`
		_, err := call(t, reporter("", doc, 0, abi.StatusOK))
		expectCallError(t, err, runtime.ClassBadResult, runtime.ErrBadResult, `type "bogus", which is not a Kubernetes NodeAddressType`)
	})
	t.Run("an instance ID with a terminal escape", func(t *testing.T) {
		doc := `{"name":"m\nx","id":"1\u001b[2J","providerID":"p\u0007","status":"running","addresses":{"10.0.0.1\u001b":"InternalIP"}}`
		p, err := rt.LoadBytes(ctx, "forger", reporter("", doc, 0, abi.StatusOK))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
		inst, err := cloud.SeedProvider(p, nil).Get(m)
		if err != nil {
			t.Fatal(err)
		}
		if inst.Name() != "m\uFFFDx" || inst.ID() != "1\uFFFD[2J" || inst.ProviderID() != "p\uFFFD" {
			t.Errorf("control characters kept: %q %q %q", inst.Name(), inst.ID(), inst.ProviderID())
		}
		if _, ok := inst.Addresses()["10.0.0.1\uFFFD"]; !ok {
			t.Errorf("address not sanitised: %v", inst.Addresses())
		}
	})
	t.Run("an error message with a terminal escape", func(t *testing.T) {
		_, err := call(t, reporter("CreateError", "", 0, abi.StatusTerminal))
		if ok, _, msg := cloudprovidererrors.IsTerminalError(err); !ok || msg != "msg\uFFFD" {
			t.Fatalf("%v", err)
		}
	})
	// The provider ID and addresses are written into the Machine: none
	// may be as large as the result document (4 MiB), which would fail
	// the Machine's write or bloat every watch.
	for name, doc := range map[string]string{
		"a 2 KiB providerID": `{"name":"m","id":"1","status":"running","providerID":"` + strings.Repeat("p", 2048) + `"}`,
		"a 2 KiB id":         `{"name":"m","id":"` + strings.Repeat("i", 2048) + `","status":"running"}`,
		"65 addresses":       `{"name":"m","id":"1","status":"running","addresses":{` + addressList(65) + `}}`,
		"a 300-byte address": `{"name":"m","id":"1","status":"running","addresses":{"` + strings.Repeat("a", 300) + `":"Hostname"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := call(t, reporter("", doc, 0, abi.StatusOK))
			expectCallError(t, err, runtime.ClassBadResult, runtime.ErrBadResult, "SPEC §8.1")
		})
	}
	t.Run("every Kubernetes address type", func(t *testing.T) {
		doc := `{"name":"m","id":"1","status":"running","addresses":{"a":"Hostname","b":"ExternalIP","c":"InternalIP","d":"ExternalDNS","e":"InternalDNS"}}`
		if _, err := call(t, reporter("", doc, 0, abi.StatusOK)); err != nil {
			t.Fatal(err)
		}
	})
}

// addressList is n InternalIP entries of an Instance's addresses.
func addressList(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"10.0.` + strconv.Itoa(i/256) + `.` + strconv.Itoa(i%256) + `":"InternalIP"`)
	}
	return b.String()
}

// logger is a guest whose Get logs with attributes that name the host's
// own keys.
func logger(attrs string) []byte {
	msg := "hello"
	body := []byte{opI32Const, 0, opI32Const, 0, opI32Const, byte(len(msg)), opI32Const, 0x80, 0x01, opI32Const}
	body = append(body, sleb(int64(len(attrs)))...)
	body = append(body, opCall, 0, opDrop, opI32Const, 0x80, 0x02, opI32Const)
	inst := `{"name":"m","id":"1","status":"running"}`
	body = append(body, sleb(int64(len(inst)))...)
	body = append(body, opCall, 1, opDrop, opI32Const, 0)
	m := providerModule(uint64(abi.CapLog), map[string][]byte{abi.MethodGet.Export(): body},
		genImport{abi.ModuleName, abi.ImportLog, []byte{valI32, valI32, valI32, valI32, valI32}, i32x1},
		genImport{abi.ModuleName, abi.ImportOutput, i32x2, i32x1})
	data := make([]byte, 256+len(inst))
	copy(data, msg)
	copy(data[128:], attrs)
	copy(data[256:], inst)
	m.extra = map[byte][]byte{11: dataSection(0, data)}
	return m.bytes()
}

// A guest's log line cannot claim to come from another provider, method
// or Machine (red-team finding 12): its attributes live in a "guest"
// group, with the JSON and the text handler.
func TestGuestLogCannotForgeAttribution(t *testing.T) {
	ctx := context.Background()
	attrs := `{"provider":"other-provider","method":"Delete","machine":"kube-system/victim","msg":"x","level":"ERROR","time":"1999"}`
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			var h slog.Handler = slog.NewJSONHandler(&buf, nil)
			if format == "text" {
				h = slog.NewTextHandler(&buf, nil)
			}
			rt := newRuntime(t, runtime.WithLogger(slog.New(h)))
			p, err := rt.LoadBytes(ctx, "hetzner", logger(attrs))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			m := newMachine("worker", "u", map[string]any{})
			if _, err := cloud.SeedProvider(p, nil).Get(m); err != nil {
				t.Fatal(err)
			}
			var line string
			for _, l := range strings.Split(buf.String(), "\n") {
				if strings.Contains(l, "hello") {
					line = l
				}
			}
			if format == "json" {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("%v: %s", err, line)
				}
				if rec["provider"] != "hetzner" || rec["method"] != "Get" || rec["machine"] != "kube-system/worker" || rec["msg"] != "hello" {
					t.Errorf("host attributes forged: %s", line)
				}
				if strings.Count(line, `"provider":`) != 2 { // the host's, and the guest's inside "guest"
					t.Errorf("want the guest's provider key inside its group only: %s", line)
				}
				if g, _ := rec["guest"].(map[string]any); g["provider"] != "other-provider" {
					t.Errorf("the guest's attributes are lost: %s", line)
				}
				return
			}
			for _, want := range []string{"provider=hetzner", "method=Get", "machine=kube-system/worker", "guest.provider=other-provider", "guest.method=Delete"} {
				if !strings.Contains(line, want) {
					t.Errorf("want %q in %s", want, line)
				}
			}
		})
	}
}

// labeller is a guest whose MachineMetricsLabels outputs doc.
func labeller(doc string) []byte {
	body := []byte{opI32Const, 0, opI32Const}
	body = append(body, sleb(int64(len(doc)))...)
	body = append(body, opCall, 0, opDrop, opI32Const, 0)
	m := providerModule(0, map[string][]byte{abi.MethodMachineMetricsLabels.Export(): body},
		genImport{abi.ModuleName, abi.ImportOutput, i32x2, i32x1})
	m.pages = 2
	m.extra = map[byte][]byte{11: dataSection(0, []byte(doc))}
	return m.bytes()
}

// MachineMetricsLabels become Prometheus label values: bounded in number
// and size, so a guest cannot blow up the controller's metrics.
func TestMetricsLabelsAreBounded(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t)
	many := map[string]string{}
	for i := range 33 {
		many["l"+strconv.Itoa(i)] = "v"
	}
	manyDoc, _ := json.Marshal(many)
	for name, tc := range map[string]struct {
		doc string
		ok  bool
	}{
		"size and region":       {`{"size":"cx22","region":"fsn1"}`, true},
		"33 labels":             {string(manyDoc), false},
		"a 64-byte name":        {`{"` + strings.Repeat("n", 64) + `":"v"}`, false},
		"a 257-byte value":      {`{"size":"` + strings.Repeat("v", 257) + `"}`, false},
		"an empty name":         {`{"":"v"}`, false},
		"a newline in the name": {`{"si\nze":"x"}`, false},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := rt.LoadBytes(ctx, "labels", labeller(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			_, err = cloud.SeedProvider(p, nil).MachineMetricsLabels(newMachine("m", "u", map[string]any{}))
			if tc.ok && err != nil {
				t.Fatal(err)
			}
			if !tc.ok {
				expectCallError(t, err, runtime.ClassBadResult, runtime.ErrBadResult)
			}
		})
	}
}
