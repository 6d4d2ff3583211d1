package runtime

import (
	"bytes"
	"context"
	"log/slog"
	"sync"

	"github.com/wasmprov/wasmprov/internal/guesttext"
)

// guestOutput turns a guest's stdout or stderr into log records, one per
// line. A guest can write without end, so the writer caps what it passes
// on: a line is cut at maxGuestLine bytes of printable text and, once the
// instance's lines have taken maxGuestTotal bytes as the log handler
// writes them (guesttext.EscapedLen: a NUL becomes three bytes, a quote
// two) plus guestRecordBytes each for the record around them (so a flood
// of empty lines is bounded too), output is dropped with one warning.
type guestOutput struct {
	logger *slog.Logger
	level  slog.Level
	stream string

	mu         sync.Mutex
	buf        []byte
	total      int64
	suppressed bool
}

const (
	maxGuestLine  = 4 << 10
	maxGuestTotal = 1 << 20
	// guestRecordBytes is what a record costs beyond its message: about
	// what slog's handlers write for the time, level, provider and
	// stream.
	guestRecordBytes = 128
)

func newGuestOutput(l *slog.Logger, level slog.Level, stream string) *guestOutput {
	return &guestOutput{logger: l, level: level, stream: stream}
}

func (w *guestOutput) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 && !w.suppressed {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := maxGuestLine - len(w.buf)
			if room > 0 {
				w.buf = append(w.buf, p[:min(room, len(p))]...)
			}
			break
		}
		room := maxGuestLine - len(w.buf)
		if room > 0 {
			w.buf = append(w.buf, p[:min(room, i)]...)
		}
		w.emit()
		p = p[i+1:]
	}
	return n, nil
}

func (w *guestOutput) emit() {
	line := guesttext.ClipPrintable(string(w.buf), maxGuestLine)
	w.buf = w.buf[:0]
	w.total += int64(guesttext.EscapedLen(line)) + guestRecordBytes
	if w.total > maxGuestTotal {
		w.suppressed = true
		w.logger.Warn("guest output exceeds limit; further output of this instance is dropped",
			"stream", w.stream, "limit", maxGuestTotal)
		return
	}
	w.logger.Log(context.Background(), w.level, line, "stream", w.stream)
}
