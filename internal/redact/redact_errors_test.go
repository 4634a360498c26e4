package redact_test

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/redact"
)

func TestStringRedactsEveryCredential(t *testing.T) {
	const sig = "Xy%2Bab/cd%3D"
	for _, c := range []struct{ in, secret, keep string }{
		{`Get "https://acct.table.core.windows.net/t()?se=2026&sig=` + sig + `&sp=r": dial tcp: connection refused`, sig, "sp=r"},
		{`Get "https://h/t?sig=` + sig + `": EOF`, sig, `": EOF`},
		{`{"err":"POST \"https://h/$batch?sv=1\u0026sig=` + sig + `\u0026sp=a\""}`, sig, `sp=a`},
		{`DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abc+def==;EndpointSuffix=x`, "abc+def==", "EndpointSuffix=x"},
		{`Authorization: SharedKey devstoreaccount1:c2lnbmF0dXJl=`, "c2lnbmF0dXJl=", "devstoreaccount1:"},
		{`Authorization: SharedKeyLite acct:c2lnbmF0dXJl=`, "c2lnbmF0dXJl=", "acct:"},
		{`Authorization: Bearer eyJ0eXAi.eyJh.c2ln`, "eyJ0eXAi", "Bearer "},
		{`<Message>url=http%3A%2F%2Fh%2Fq%3Fsv%3D1%26sig%3D` + sig + `%26sp%3Dr</Message>`, sig, "</Message>"},
		{`echo http%253A%252F%252Fh%253Fsig%253D` + sig + `%2526sp%253Dr end`, sig, " end"},
		{`{"u":"https:\/\/h\/q?sv=1&sig=Ab\/` + sig + `&sp=r"}`, sig, "sp=r"},
	} {
		got := redact.String(c.in)
		if strings.Contains(got, c.secret) || !strings.Contains(got, redact.Redacted) || !strings.Contains(got, c.keep) {
			t.Errorf("String(%q) = %q", c.in, got)
		}
	}
	if s := "nothing secret: signature=ok, rsig=1"; redact.String(s) != s {
		t.Errorf("changed a text without credentials: %q", redact.String(s))
	}
}

func TestErrorWrapsAndKeepsTheChain(t *testing.T) {
	opErr := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	ue := &url.Error{Op: "Get", URL: "https://h/t?sig=SECRET&sp=r", Err: opErr}
	err := redact.Error(fmt.Errorf("table: Get: %w", ue))
	if strings.Contains(err.Error(), "SECRET") || strings.Contains(fmt.Sprintf("%+v", err), "SECRET") {
		t.Fatalf("secret in %q", err)
	}
	var got *url.Error
	var ne net.Error
	if !errors.As(err, &got) || got != ue || !errors.As(err, &ne) {
		t.Fatalf("the chain lost the *url.Error or net.Error: %v", err)
	}
	if redact.Error(err) != err || redact.Error(nil) != nil {
		t.Fatal("Error is not idempotent, or wraps nil")
	}
}
