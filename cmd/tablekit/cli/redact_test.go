package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// sigCore starts the SAS signature the redaction test's connection string
// carries. It is alphanumeric, so it reads the same raw, query-escaped and
// inside a JSON string: one substring finds every form of it.
const sigCore = "tkCLIsig0"

// TestOutputNeverHoldsTheSignature runs commands with a SAS connection
// string against endpoints that fail in the ways that put the request URL
// into an error's text (nothing listening; a 403 whose message echoes the
// URL, as a gateway might), and checks that neither standard output nor
// standard error holds the signature.
func TestOutputNeverHoldsTheSignature(t *testing.T) {
	sasQuery := "sv=2023-11-03&ss=bqt&srt=sco&sp=rwdlacup&se=2099-01-01T00%3A00%3A00Z&sig=" + url.QueryEscape(sigCore+"+ab/cd==")
	refused := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		return "http://" + addr
	}
	echoing := func(t *testing.T) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			full := "http://" + r.Host + r.URL.String()
			msg := fmt.Sprintf("Server failed to authenticate the request. URL: %s escaped: %s", full, url.QueryEscape(full))
			w.Header().Set("x-ms-error-code", "AuthenticationFailed")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"odata.error":{"code":"AuthenticationFailed","message":{"lang":"en-US","value":%q}}}`, msg)
		}))
		t.Cleanup(s.Close)
		return s.URL
	}
	for name, endpoint := range map[string]func(*testing.T) string{"connection refused": refused, "403 echoing the URL": echoing} {
		t.Run(name, func(t *testing.T) {
			base := endpoint(t) + "/devstoreaccount1"
			conn := fmt.Sprintf("BlobEndpoint=%s;QueueEndpoint=%s;TableEndpoint=%s;SharedAccessSignature=%s", base, base, base, sasQuery)
			for _, args := range [][]string{
				{"poison", "list", "-conn", conn, "-queue", "work-poison"},
				{"-json", "periods", "precreate", "-conn", conn, "-prefix", "Logins", "-period", "daily"},
			} {
				var out, errOut strings.Builder
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				code := Main(ctx, args, &Options{Stdout: &out, Stderr: &errOut})
				cancel()
				if code == ExitOK {
					t.Errorf("%s: exit %d against a failing endpoint; want a failure", strings.Join(args[:2], " "), code)
				}
				for stream, text := range map[string]string{"stdout": out.String(), "stderr": errOut.String()} {
					if strings.Contains(text, sigCore) {
						t.Errorf("%s: %s holds the signature: %s", strings.Join(args[:2], " "), stream, text)
					}
				}
			}
		})
	}
}
