package registry

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// EventKind says what happened to a provider in a Registry.
type EventKind string

// Event kinds.
const (
	// EventLoaded: a provider was loaded for the first time (or again after
	// it had been removed).
	EventLoaded EventKind = "loaded"
	// EventReloaded: a new version replaced the serving one.
	EventReloaded EventKind = "reloaded"
	// EventRejected: a new version was refused (unreadable, corrupt, wrong
	// ABI, digest pin, bad policy, failed smoke call, duplicate name); the
	// previous version, if any, keeps serving.
	EventRejected EventKind = "rejected"
	// EventUnloaded: the provider was removed; calls already running finish.
	EventUnloaded EventKind = "unloaded"
	// EventDrained: a replaced or removed version finished its last call
	// and was closed; its compiled module and memory are released.
	EventDrained EventKind = "drained"
	// EventWatchError: the directory watch reported a problem (the directory
	// disappeared, an fsnotify error). Providers keep serving.
	EventWatchError EventKind = "watch-error"
)

// Event is what the Registry tells the embedding program (see
// WithEventHandler).
type Event struct {
	Kind     EventKind
	Provider string // empty for directory-level watch errors
	Source   string // file path (the image entry's for an image), "fs:<name>" or "code"
	// SHA256 is the digest of the version the event is about (the new
	// version for loaded/reloaded/rejected, the old one for drained and
	// unloaded); empty when the module could not be read.
	SHA256    string
	OldSHA256 string // the version replaced (reloaded) or kept serving (rejected)
	// Image is, for a version from an image entry (loaded, reloaded), the
	// artifact it was pulled from: repository@sha256:….
	Image    string
	Err      error         // why (rejected, watch-error, drained with a timeout)
	Duration time.Duration // read→swap for loads, swap→closed for drained
	Time     time.Time
}

func (r *Registry) rejectLocked(e *entry, src source, sum string, err error, start time.Time) error {
	r.backOff(e, err)
	r.reject(e, e.name, src, sum, err, start)
	return err
}

// reject reports a refused version of name (e nil: the name was invalid)
// in the log, the entry's stats and an event.
func (r *Registry) reject(e *entry, name string, src source, sum string, err error, start time.Time) {
	ev := Event{Kind: EventRejected, Provider: name, Source: sourceOf(e, name, src), SHA256: sum, Err: err, Duration: time.Since(start)}
	attrs := []any{"provider", name, "source", ev.Source, "error", err.Error()}
	repeated := false
	if e != nil {
		if cur := e.cur.Load(); cur != nil {
			ev.OldSHA256 = cur.SHA256()
			attrs = append(attrs, "serving", cur.SHA256())
		}
		st := &e.st
		st.mu.Lock()
		st.reloadsFailed++
		repeated = st.lastErr == err.Error()
		if !repeated {
			st.lastErrAt = time.Now()
		}
		st.lastErr = err.Error()
		st.mu.Unlock()
	}
	if sum != "" {
		attrs = append(attrs, "sha256", sum)
	}
	// A failure is logged when it starts; the same failure at every poll
	// after that is only counted (reloads failed, lastError), else an
	// outage or an unsigned tag floods the log.
	level := slog.LevelError
	ve, isVersion := errors.AsType[*VersionError](err)
	switch {
	case repeated:
		level = slog.LevelDebug
	case ev.OldSHA256 != "" && isVersion && (ve.Stage == StagePull || ve.Stage == StageVerify):
		// The registry or a signature, not the module: nothing is lost.
		level = slog.LevelWarn
	}
	msg := "provider version rejected; no version is serving"
	if ev.OldSHA256 != "" {
		msg = "provider version rejected; the previous version keeps serving"
	}
	r.cfg.logger.Log(context.Background(), level, msg, attrs...)
	r.emit(ev)
}

func (r *Registry) emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if r.cfg.onEvent != nil {
		r.cfg.onEvent(ev)
	}
}
