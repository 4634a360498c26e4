package redact_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/redact"
)

type urlHolder struct{ U string }

// Every kind of value a log site can pass reaches the output without the
// signature, through a JSON and a text handler, in the message, in
// attributes given at the call, in WithAttrs and inside groups; values
// without a secret keep their kind.
func TestHandlerRedactsEveryRecord(t *testing.T) {
	const secret = "U0VDUkVU%3D"
	raw := "https://a.queue.core.windows.net/q?sv=1&sig=" + secret + "&sp=r"
	ue := &url.Error{Op: "Get", URL: raw, Err: errors.New("connection refused")}
	for _, mk := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		var buf bytes.Buffer
		l := redact.Logger(slog.New(mk(&buf)))
		if redact.Logger(l) != l {
			t.Error("Logger wrapped a redacting logger again")
		}
		l.With("url", raw).WithGroup("g").Warn("failed: "+raw,
			"err", ue, "wrapped", fmt.Errorf("op: %w", ue), "holder", urlHolder{raw},
			slog.Group("inner", "s", raw), "n", 7)
		out := buf.String()
		if strings.Contains(out, secret) || !strings.Contains(out, redact.Redacted) {
			t.Errorf("log output %s", out)
		}
		if !strings.Contains(out, "7") {
			t.Errorf("lost a plain value: %s", out)
		}
	}
}
