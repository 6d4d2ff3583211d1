package cloudprovider

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapHandler is a slog.Handler writing to a zap logger, so that the
// runtime's per-call records (guest logs included) reach the logger
// machine-controller passed, with its fields. Groups become dotted key
// prefixes: the guest's attributes arrive as "guest.<key>", where the
// host put them so a guest cannot shadow the host's fields.
type zapHandler struct {
	z      *zap.Logger
	prefix string // the open groups, "a.b."
}

func newZapHandler(z *zap.Logger) *zapHandler { return &zapHandler{z: z} }

func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelError:
		return zapcore.ErrorLevel
	case l >= slog.LevelWarn:
		return zapcore.WarnLevel
	case l >= slog.LevelInfo:
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}

func (h *zapHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.z.Core().Enabled(zapLevel(l))
}

func (h *zapHandler) Handle(_ context.Context, r slog.Record) error {
	ce := h.z.Check(zapLevel(r.Level), r.Message)
	if ce == nil {
		return nil
	}
	fields := make([]zap.Field, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		fields = appendFields(fields, h.prefix, a)
		return true
	})
	ce.Write(fields...)
	return nil
}

func (h *zapHandler) WithAttrs(as []slog.Attr) slog.Handler {
	fields := make([]zap.Field, 0, len(as))
	for _, a := range as {
		fields = appendFields(fields, h.prefix, a)
	}
	return &zapHandler{z: h.z.With(fields...), prefix: h.prefix}
}

func (h *zapHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &zapHandler{z: h.z, prefix: h.prefix + name + "."}
}

// appendFields flattens a into zap fields under prefix.
func appendFields(fields []zap.Field, prefix string, a slog.Attr) []zap.Field {
	v := a.Value.Resolve()
	if a.Key == "" && v.Kind() != slog.KindGroup {
		return fields // slog drops empty keys too
	}
	key := prefix + a.Key
	switch v.Kind() {
	case slog.KindGroup:
		p := prefix
		if a.Key != "" {
			p = key + "."
		}
		for _, ga := range v.Group() {
			fields = appendFields(fields, p, ga)
		}
		return fields
	case slog.KindString:
		return append(fields, zap.String(key, v.String()))
	case slog.KindInt64:
		return append(fields, zap.Int64(key, v.Int64()))
	case slog.KindUint64:
		return append(fields, zap.Uint64(key, v.Uint64()))
	case slog.KindFloat64:
		return append(fields, zap.Float64(key, v.Float64()))
	case slog.KindBool:
		return append(fields, zap.Bool(key, v.Bool()))
	case slog.KindDuration:
		return append(fields, zap.Duration(key, v.Duration()))
	case slog.KindTime:
		return append(fields, zap.Time(key, v.Time()))
	}
	return append(fields, zap.Any(key, v.Any()))
}
