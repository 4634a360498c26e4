package redact

import (
	"context"
	"fmt"
	"log/slog"
)

// Logger returns l with every record it writes redacted (see Handler); a
// nil l stays nil, and a logger already redacting is returned as it is.
// A component that takes a *slog.Logger in its options wraps it once, at
// construction, so no log site can forget.
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	if _, ok := l.Handler().(*handler); ok {
		return l
	}
	return slog.New(Handler(l.Handler()))
}

// Handler wraps h so that each record's message and every attribute value
// (strings, errors, Stringers, anything else printed with %+v, and the
// values inside groups and LogValuers) reaches h with its credentials
// replaced. Values without a secret reach h unchanged, with their kind:
// an int stays an int, an error without a signature stays that error.
func Handler(h slog.Handler) slog.Handler {
	if r, ok := h.(*handler); ok {
		return r
	}
	return &handler{next: h}
}

type handler struct{ next slog.Handler }

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = attr(a)
	}
	return &handler{next: h.next.WithAttrs(red)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name)}
}

// attr returns a with its value redacted.
func attr(a slog.Attr) slog.Attr {
	a.Value = value(a.Value)
	return a
}

func value(v slog.Value) slog.Value {
	v = v.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); String(s) != s {
			return slog.StringValue(String(s))
		}
	case slog.KindGroup:
		as := v.Group()
		red := make([]slog.Attr, len(as))
		for i, a := range as {
			red[i] = attr(a)
		}
		return slog.GroupValue(red...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			// A JSON handler prints an error by Error(); a text handler
			// too. The wrapped error keeps the chain for handlers that
			// look inside it.
			if String(x.Error()) != x.Error() || String(fmt.Sprintf("%+v", x)) != fmt.Sprintf("%+v", x) {
				return slog.AnyValue(Error(x))
			}
		default:
			// Stringers, structs, maps and slices print with fmt (the text
			// handler) or as JSON (the JSON handler, whose escaping the
			// patterns allow for); either way the printed form decides.
			s := fmt.Sprintf("%+v", x)
			if String(s) != s {
				return slog.StringValue(String(s))
			}
		}
	}
	return v
}
