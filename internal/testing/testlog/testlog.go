// Package testlog captures log output in tests: Buffer for a handler's
// text or JSON output, Capture for the records themselves. Both are safe
// for the concurrent writes of a runtime whose calls log from several
// goroutines. It imports the standard library only, so any package's tests
// can use it.
package testlog

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Buffer is a bytes.Buffer safe for concurrent writes.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// NewText returns a text logger at Debug level writing into a new Buffer.
func NewText() (*slog.Logger, *Buffer) {
	b := &Buffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// Record is one captured record, each attribute as its value's String (a
// group attribute as "[k=v …]").
type Record struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

func (r Record) String() string { return fmt.Sprintf("%s %q %v", r.Level, r.Msg, r.Attrs) }

// Capture is a slog.Handler that keeps every record at Debug and up.
// WithGroup is ignored: the runtime's own attributes (provider, method) are
// never grouped, and a guest's attributes arrive as one "guest" group
// attribute.
type Capture struct {
	mu   *sync.Mutex
	recs *[]Record
	with []slog.Attr
}

// NewCapture returns an empty Capture.
func NewCapture() *Capture { return &Capture{mu: new(sync.Mutex), recs: new([]Record)} }

// Enabled reports true from Debug up.
func (c *Capture) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelDebug }

// Handle keeps r.
func (c *Capture) Handle(_ context.Context, r slog.Record) error {
	rec := Record{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range c.with {
		rec.Attrs[a.Key] = a.Value.Resolve().String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.Resolve().String()
		return true
	})
	c.mu.Lock()
	*c.recs = append(*c.recs, rec)
	c.mu.Unlock()
	return nil
}

// WithAttrs returns a handler that adds as to every record, sharing c's
// records.
func (c *Capture) WithAttrs(as []slog.Attr) slog.Handler {
	n := *c
	n.with = append(append([]slog.Attr(nil), c.with...), as...)
	return &n
}

// WithGroup returns c (see Capture).
func (c *Capture) WithGroup(string) slog.Handler { return c }

// All returns every record so far.
func (c *Capture) All() []Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Record(nil), *c.recs...)
}

// Records returns the records whose "provider" attribute is provider and
// whose message contains msg.
func (c *Capture) Records(provider, msg string) []Record {
	var out []Record
	for _, r := range c.All() {
		if r.Attrs["provider"] == provider && strings.Contains(r.Msg, msg) {
			out = append(out, r)
		}
	}
	return out
}

// Expect asserts that provider logged exactly n records at level whose
// message contains msg, and returns them.
func (c *Capture) Expect(t testing.TB, provider string, level slog.Level, msg string, n int) []Record {
	t.Helper()
	var got []Record
	for _, r := range c.Records(provider, msg) {
		if r.Level == level {
			got = append(got, r)
		}
	}
	if len(got) != n {
		t.Errorf("want %d %s log record(s) %q from provider %q, got %d: %v", n, level, msg, provider, len(got), got)
	}
	return got
}
