package redact

import (
	"context"
	"fmt"
	"log/slog"
)

// NewHandler returns a slog.Handler that redacts before next sees anything: the message,
// attribute keys and values (strings, errors, Stringers, and any other value as it would be
// printed), group names, and the attributes of WithAttrs. Numbers, booleans, times and
// durations pass unchanged. It is meant to wrap every handler a process logs through, so
// that a secret reaching a log call at any level, from any package (mcp-go's included),
// never reaches the log file.
func NewHandler(next slog.Handler, r *Redactor) slog.Handler {
	return &handler{next: next, r: r}
}

type handler struct {
	next slog.Handler
	r    *Redactor
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return &handler{next: h.next.WithAttrs(red), r: h.r}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(h.r.String(name)), r: h.r}
}

func (h *handler) attr(a slog.Attr) slog.Attr {
	a.Key = h.r.String(a.Key)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(h.r.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]slog.Attr, len(g))
		for i, x := range g {
			red[i] = h.attr(x)
		}
		a.Value = slog.GroupValue(red...)
	case slog.KindAny:
		var s string
		switch x := v.Any().(type) {
		case error:
			s = x.Error()
		case fmt.Stringer:
			s = x.String()
		default:
			s = fmt.Sprintf("%v", x)
		}
		if red := h.r.String(s); red != s {
			a.Value = slog.StringValue(red)
		} else {
			a.Value = v
		}
	default:
		a.Value = v
	}
	return a
}
