package conformance

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
)

// deniedMessage is what the host logs when a guest calls a host function
// of a capability it was not granted (hostmodule.Call.check).
const deniedMessage = "guest called a host function it was not granted"

// deniedLog collects the host functions a guest called without the
// capability, as "function in Method".
type deniedLog struct {
	mu   sync.Mutex
	seen map[string]int
}

func (d *deniedLog) add(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen == nil {
		d.seen = map[string]int{}
	}
	d.seen[s]++
}

func (d *deniedLog) list() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.seen))
	for s, n := range d.seen {
		out = append(out, fmt.Sprintf("%s (%d×)", s, n))
	}
	sort.Strings(out)
	return out
}

// captureHandler passes records on and notes capability refusals.
type captureHandler struct {
	log   *deniedLog
	next  slog.Handler
	attrs []slog.Attr
}

func (h *captureHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.next.Enabled(ctx, l)
}

func (h *captureHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == deniedMessage {
		var fn, method string
		visit := func(a slog.Attr) bool {
			switch a.Key {
			case "function":
				fn = a.Value.String()
			case "method":
				method = a.Value.String()
			}
			return true
		}
		for _, a := range h.attrs {
			visit(a)
		}
		r.Attrs(visit)
		h.log.add(fmt.Sprintf("%s in %s", fn, method))
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *captureHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &captureHandler{log: h.log, next: h.next.WithAttrs(as), attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *captureHandler) WithGroup(name string) slog.Handler {
	return &captureHandler{log: h.log, next: h.next.WithGroup(name), attrs: h.attrs}
}
