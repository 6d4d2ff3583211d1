package runtime

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// What a guest's stdout puts into the log is bounded as it reaches the
// handler: NUL bytes (three bytes each once made printable), quotes (two
// in JSON) and floods of empty lines (a record each) all stop at the
// per-instance cap. Counted on the guest's bytes, 1 MiB of NULs became
// 3 MiB of log and a million empty lines a million records.
func TestGuestOutputBoundAsWritten(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
	}{
		{"NUL bytes", strings.Repeat("\x00", 1023) + "\n"},
		{"quotes", strings.Repeat(`"`, 1023) + "\n"},
		{"escape sequences", strings.Repeat("\x1b[2J", 255) + "\n"},
		{"empty lines", "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}})
			w := newGuestOutput(slog.New(h), slog.LevelInfo, "stdout")
			chunk := []byte(strings.Repeat(tc.line, max(1, 64<<10/len(tc.line))))
			for written := 0; written < 16<<20; written += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					t.Fatal(err)
				}
			}
			out := buf.String()
			if n := strings.Count(out, "guest output exceeds limit"); n != 1 {
				t.Fatalf("%d warnings, want 1", n)
			}
			records := strings.Count(out, "\n")
			t.Logf("%d records, %d bytes of log", records, len(out))
			if len(out) > maxGuestTotal+1024 {
				t.Errorf("16 MiB of output put %d bytes into the log: the cap is %d", len(out), maxGuestTotal)
			}
			if strings.ContainsAny(out, "\x00\x1b") {
				t.Errorf("control characters reached the log")
			}
		})
	}
}
