package runtime

import (
	"bytes"
	"context"
	"log/slog"
	"sync"

	"github.com/wasmprov/wasmprov/internal/hostfuncs"
)

// guestOutput turns a guest's stdout or stderr into log records, one per
// line. A guest can write without end, so the writer caps what it keeps:
// lines are truncated at maxLine bytes and, past maxTotal bytes for the
// instance, output is dropped with one warning.
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
)

func newGuestOutput(l *slog.Logger, level slog.Level, stream string) *guestOutput {
	return &guestOutput{logger: l, level: level, stream: stream}
}

func (w *guestOutput) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if w.suppressed {
		return n, nil
	}
	w.total += int64(n)
	if w.total > maxGuestTotal {
		w.suppressed = true
		w.logger.Warn("guest output exceeds limit; further output of this instance is dropped",
			"stream", w.stream, "limit", maxGuestTotal)
		return n, nil
	}
	for len(p) > 0 {
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
	w.logger.Log(context.Background(), w.level, hostfuncs.Printable(string(w.buf)), "stream", w.stream)
	w.buf = w.buf[:0]
}
