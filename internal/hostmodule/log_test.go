package hostmodule

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wasmprov/wasmprov/abi"
	clusterv1alpha1 "github.com/wasmprov/wasmprov/apis/cluster/v1alpha1"
	"github.com/wasmprov/wasmprov/internal/guesttext"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A guest's log attributes cannot set or shadow the keys the host writes:
// with slog's JSON handler a forged "provider" used to produce a second
// top-level "provider" key that most log pipelines read as the real one.
func TestLogGuestCannotForgeHostKeys(t *testing.T) {
	forged := []byte(`{"provider":"other-provider","method":"Delete","machine":"kube-system/victim","level":"ERROR","time":"2000-01-01T00:00:00Z","msg":"forged","server":"cx22"}`)
	for _, handler := range []string{"json", "text"} {
		t.Run(handler, func(t *testing.T) {
			var buf bytes.Buffer
			var h slog.Handler = slog.NewJSONHandler(&buf, nil)
			if handler == "text" {
				h = slog.NewTextHandler(&buf, nil)
			}
			env := &Env{Logger: slog.New(h).With("provider", "hetzner")}
			c := NewCall(context.Background(), env, abi.MethodCreate, abi.CapLog)
			c.Machine = &clusterv1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "team-a"}}
			if err := c.Log(int32(slog.LevelInfo), []byte("creating server"), forged); err != nil {
				t.Fatal(err)
			}
			line := strings.TrimSpace(buf.String())
			if handler == "json" {
				// A duplicate key would decode silently; count the keys.
				dec := json.NewDecoder(strings.NewReader(line))
				keys := map[string]int{}
				if _, err := dec.Token(); err != nil {
					t.Fatal(err)
				}
				for dec.More() {
					k, _ := dec.Token()
					keys[k.(string)]++
					var v json.RawMessage
					if err := dec.Decode(&v); err != nil {
						t.Fatal(err)
					}
				}
				for _, k := range []string{"provider", "method", "machine", "level", "time", "msg"} {
					if keys[k] != 1 {
						t.Errorf("top-level key %q appears %d times: %s", k, keys[k], line)
					}
				}
				var rec struct {
					Provider, Method, Machine, Msg string
					Guest                          map[string]any `json:"guest"`
				}
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatal(err)
				}
				if rec.Provider != "hetzner" || rec.Method != "Create" || rec.Machine != "team-a/m1" || rec.Msg != "creating server" {
					t.Errorf("host keys overwritten: %s", line)
				}
				if rec.Guest["provider"] != "other-provider" || rec.Guest["server"] != "cx22" {
					t.Errorf("guest attributes lost: %s", line)
				}
				return
			}
			for _, want := range []string{"provider=hetzner", "method=Create", "machine=team-a/m1", "guest.provider=other-provider", "guest.server=cx22"} {
				if !strings.Contains(line, want) {
					t.Errorf("want %q in %s", want, line)
				}
			}
			for _, bad := range []string{" provider=other-provider", " method=Delete", " machine=kube-system/victim"} {
				if strings.Contains(line, bad) {
					t.Errorf("forged %q in %s", bad, line)
				}
			}
		})
	}
}

// One call cannot flood the host's log: past MaxLogRecordsPerCall records
// or MaxLogBytesPerCall bytes, log answers TOO_LARGE and the host warns
// once.
func TestLogQuotaPerCall(t *testing.T) {
	var buf bytes.Buffer
	env := &Env{Logger: slog.New(slog.NewJSONHandler(&buf, nil)), Limits: Limits{MaxLogRecordsPerCall: 10, MaxLogBytesPerCall: 100}}
	c := NewCall(context.Background(), env, abi.MethodGet, abi.CapLog)
	mem := &flatMemory{b: bytes.Repeat([]byte("a"), 4096)}
	f := hostFunction(t, abi.ImportLog)
	logOnce := func(n uint32) int32 {
		stack := []uint64{0, 0, uint64(n), 0, 0}
		f.Fn(WithCall(context.Background(), c), mem, stack)
		return int32(uint32(stack[0]))
	}
	for i := range 10 {
		if r := logOnce(1); r != 0 {
			t.Fatalf("record %d refused: %d", i, r)
		}
	}
	if r := logOnce(1); r != int32(abi.ErrnoTooLarge) {
		t.Fatalf("the 11th record: %d, want TOO_LARGE", r)
	}
	if r := logOnce(1); r != int32(abi.ErrnoTooLarge) {
		t.Fatalf("the 12th record: %d, want TOO_LARGE", r)
	}
	if n := strings.Count(buf.String(), "exceeds its limit"); n != 1 {
		t.Errorf("want one warning, got %d:\n%s", n, buf.String())
	}
	c = NewCall(context.Background(), env, abi.MethodGet, abi.CapLog)
	if r := logOnce(100); r != 0 {
		t.Fatalf("a 100-byte record: %d", r)
	}
	if r := logOnce(1); r != int32(abi.ErrnoTooLarge) {
		t.Fatalf("past the byte quota: %d, want TOO_LARGE", r)
	}
}

// Guest text that reaches a person carries no terminal control sequences:
// an error message is made printable (package guesttext) before anything
// stores it.
func TestGuestTextIsPrintable(t *testing.T) {
	c := NewCall(context.Background(), &Env{}, abi.MethodGet, 0)
	c.SetError("CreateError", "\x1b]0;owned\x07 failed", 0)
	if strings.ContainsAny(c.ErrMessage, "\x1b\x07") || c.ErrMessage != guesttext.Printable(c.ErrMessage) {
		t.Errorf("error message kept control characters: %q", c.ErrMessage)
	}
}

// The log quota counts the bytes that reach the handler, not the guest's:
// a NUL becomes the three bytes of U+FFFD, a quote two bytes in JSON. With
// the quota counted on the guest's bytes, 1 MiB of NULs put 3 MiB into the
// log. Every record is as long as the quota lets it be; what the handler
// wrote beyond the host's own fields must stay within the quota, for slog's
// JSON and text handlers alike.
func TestLogQuotaCountsWhatReachesTheHandler(t *testing.T) {
	const quota = 64 << 10
	attrs, _ := json.Marshal(map[string]string{"q": strings.Repeat(`"\`+"\x00", 1000), "\x1b": "\u202e"})
	for _, tc := range []struct {
		name       string
		msg, attrs []byte
	}{
		{"NUL bytes", bytes.Repeat([]byte{0}, 4096), nil},
		{"escape sequences", bytes.Repeat([]byte("\x1b[2J\xff"), 800), nil},
		{"quotes and backslashes", bytes.Repeat([]byte(`"\`), 2000), nil},
		{"attributes", []byte("m"), attrs},
		{"raw attributes", []byte("m"), bytes.Repeat([]byte{1, '"'}, 2000)},
	} {
		for _, handler := range []string{"json", "text"} {
			t.Run(tc.name+"/"+handler, func(t *testing.T) {
				var buf bytes.Buffer
				noTime := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey {
						return slog.Attr{}
					}
					return a
				}}
				var h slog.Handler = slog.NewJSONHandler(&buf, noTime)
				if handler == "text" {
					h = slog.NewTextHandler(&buf, noTime)
				}
				env := &Env{Logger: slog.New(h), Limits: Limits{MaxLogBytesPerCall: quota}}
				// The host's own part of a record: an empty one.
				c := NewCall(context.Background(), env, abi.MethodGet, abi.CapLog)
				if err := c.Log(0, nil, nil); err != nil {
					t.Fatal(err)
				}
				empty := buf.Len()
				buf.Reset()

				mem := &flatMemory{b: append(append([]byte{}, tc.msg...), tc.attrs...)}
				f := hostFunction(t, abi.ImportLog)
				c = NewCall(context.Background(), env, abi.MethodGet, abi.CapLog)
				records := 0
				for range 10000 {
					stack := []uint64{0, 0, uint64(len(tc.msg)), uint64(len(tc.msg)), uint64(len(tc.attrs))}
					f.Fn(WithCall(context.Background(), c), mem, stack)
					if r := int32(uint32(stack[0])); r != 0 {
						if r != int32(abi.ErrnoTooLarge) {
							t.Fatalf("log answered %d", r)
						}
						break
					}
					records++
				}
				out := buf.String()
				warning := strings.LastIndex(out, "level=WARN")
				if handler == "json" {
					warning = strings.LastIndex(out, `{"level":"WARN"`)
				}
				if warning < 0 || records == 0 {
					t.Fatalf("%d records, no quota warning", records)
				}
				guest := warning - records*empty
				t.Logf("%d records, %d bytes of guest text in the log", records, guest)
				if guest > quota {
					t.Errorf("%d records put %d bytes of guest text into the log: the quota is %d", records, guest, quota)
				}
				if strings.ContainsAny(out[:warning], "\x00\x01\x1b\u202e") {
					t.Errorf("control or format characters reached the log")
				}
			})
		}
	}
}

// An error message is cut after it is made printable: 64 KiB of NULs
// were 192 KiB of U+FFFD in the Machine's status.
func TestErrorMessageBoundAfterReplacement(t *testing.T) {
	limit := int(DefaultLimits.MaxMessageBytes)
	for _, msg := range []string{
		strings.Repeat("\x00", limit),
		strings.Repeat("\xff", limit),
		strings.Repeat("é", limit),
		strings.Repeat("a", limit+1),
	} {
		c := NewCall(context.Background(), &Env{}, abi.MethodCreate, 0)
		c.SetError("CreateError", msg, 0)
		if len(c.ErrMessage) > limit {
			t.Errorf("a %d-byte message became %d bytes (limit %d)", len(msg), len(c.ErrMessage), limit)
		}
		if !utf8.ValidString(c.ErrMessage) || !strings.HasSuffix(c.ErrMessage, guesttext.Ellipsis) {
			t.Errorf("a cut message should be UTF-8 and end with %q: ...%q", guesttext.Ellipsis, c.ErrMessage[max(0, len(c.ErrMessage)-8):])
		}
	}
	c := NewCall(context.Background(), &Env{}, abi.MethodCreate, 0)
	c.SetError("CreateError", strings.Repeat("a", limit), 0)
	if len(c.ErrMessage) != limit || strings.HasSuffix(c.ErrMessage, guesttext.Ellipsis) {
		t.Errorf("a message of exactly the limit was changed (%d bytes)", len(c.ErrMessage))
	}
}

// Numbers in a guest's log attributes keep what they are: an integer is
// written as an integer (a Droplet ID of 3164454 used to become
// 3.164454e+06, and one past 2^53 lost its last digits), a fraction as a
// float, nested ones too.
func TestLogKeepsIntegers(t *testing.T) {
	var buf bytes.Buffer
	env := &Env{Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	c := NewCall(context.Background(), env, abi.MethodCreate, abi.CapLog)
	attrs := []byte(`{"droplet":3164454,"big":9007199254740993,"max":18446744073709551615,"neg":-42,"f":1.5,"e":1e400,"nested":{"id":123456789}}`)
	if err := c.Log(int32(slog.LevelInfo), []byte("created"), attrs); err != nil {
		t.Fatal(err)
	}
	line := buf.String()
	for _, want := range []string{"guest.droplet=3164454 ", "guest.big=9007199254740993 ", "guest.max=18446744073709551615 ",
		"guest.neg=-42 ", "guest.f=1.5 ", "guest.e=1e400 ", `guest.nested=map[id:123456789]`} {
		if !strings.Contains(line, want) {
			t.Errorf("the line lacks %q:\n%s", want, line)
		}
	}
	// Trailing data after the object is not an object: logged raw, as
	// before.
	buf.Reset()
	if err := c.Log(int32(slog.LevelInfo), []byte("x"), []byte(`{"a":1} {"b":2}`)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "guest.raw=") {
		t.Errorf("attributes with trailing data not logged raw:\n%s", buf.String())
	}
}
