package redact_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/apishape"
	"github.com/tablekit/tablekit/internal/trace"
)

// The proof that no secret leaves tablekit: every exported function and
// method that takes a context (as apishape.Discover finds them) is called
// with SAS-authenticated clients whose transport fails in each way that
// puts the request URL into an error's text, and nothing it returns, logs
// or traces holds the signature, however escaped.

// sigCore is the unescaped start of the signature every client carries.
// It is alphanumeric, so it reads the same raw, query-escaped, escaped
// twice and inside a JSON string: one substring finds them all.
const sigCore = "tkPROOFsig0"

// signature is the SAS signature: base64, with the characters that URL
// and JSON escaping change.
const signature = sigCore + "+ab/cd=="

// leaks reports whether s holds the signature in any form.
func leaks(s string) bool { return strings.Contains(s, sigCore) }

// failure is one way the transport fails.
type failure struct {
	name string
	// endpoint returns the base URL of a server failing this way.
	endpoint func(t *testing.T) string
}

var failures = []failure{
	{"connection refused", func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close() // nothing listens there now
		return "http://" + addr
	}},
	{"reset mid-body", func(t *testing.T) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"value\":[{\"PartitionKey\":\"")
			_ = buf.Flush()
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // close with RST
			}
			_ = conn.Close()
		}))
		t.Cleanup(s.Close)
		return s.URL
	}},
	{"403 echoing the URL", func(t *testing.T) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			full := "http://" + r.Host + r.URL.String()
			// The URL as sent, query-escaped, and inside a JSON string (as
			// a proxy or gateway might echo it).
			msg := fmt.Sprintf("Server failed to authenticate the request. URL: %s escaped: %s", full, url.QueryEscape(full))
			w.Header().Set("x-ms-error-code", "AuthenticationFailed")
			if strings.Contains(r.Header.Get("Accept"), "json") || strings.Contains(r.URL.Path, "Tables") || strings.Contains(r.Header.Get("DataServiceVersion"), "3.0") {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				fmt.Fprintf(w, `{"odata.error":{"code":"AuthenticationFailed","message":{"lang":"en-US","value":%q}}}`, msg)
				return
			}
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><Error><Code>AuthenticationFailed</Code><Message>%s</Message></Error>`, strings.ReplaceAll(msg, "&", "&amp;"))
		}))
		t.Cleanup(s.Close)
		return s.URL
	}},
}

// sasQuery is an account SAS carrying signature.
var sasQuery = "sv=2023-11-03&ss=bqt&srt=sco&sp=rwdlacup&se=2099-01-01T00%3A00%3A00Z&sig=" + url.QueryEscape(signature)

// env holds the failing clients and the recorders one call reports to.
type env struct {
	base   string
	svc    *aztables.ServiceClient
	tbl    *aztables.Client
	tbl2   *aztables.Client
	q      *azqueue.QueueClient
	poison *azqueue.QueueClient
	blobs  *azblob.Client
	log    *slog.Logger
	tp     tracing.Provider
	// conn is a SAS connection string to the failing endpoint.
	conn string
	// fake services, for callers whose subject must first be read from a
	// working store before the failing one is used.
	fakeTables *fake.TableService
	fakeBlobs  *fake.BlobService
}

func newEnv(t *testing.T, f failure, log *slog.Logger, tp tracing.Provider) *env {
	base := f.endpoint(t) + "/devstoreaccount1"
	co := azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1, TryTimeout: 5 * time.Second}, TracingProvider: tp}
	svc, err := aztables.NewServiceClientWithNoCredential(base+"?"+sasQuery, &aztables.ClientOptions{ClientOptions: co})
	if err != nil {
		t.Fatal(err)
	}
	queue := func(name string) *azqueue.QueueClient {
		c, err := azqueue.NewQueueClientWithNoCredential(base+"/"+name+"?"+sasQuery, &azqueue.ClientOptions{ClientOptions: co})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	blobs, err := azblob.NewClientWithNoCredential(base+"?"+sasQuery, &azblob.ClientOptions{ClientOptions: co})
	if err != nil {
		t.Fatal(err)
	}
	conn := fmt.Sprintf("BlobEndpoint=%s;QueueEndpoint=%s;TableEndpoint=%s;SharedAccessSignature=%s", base, base, base, sasQuery)
	return &env{base: base, svc: svc, tbl: svc.NewClient("proof"), tbl2: svc.NewClient("proofcopies"),
		q: queue("work"), poison: queue("work-poison"), blobs: blobs, log: log, tp: tp, conn: conn,
		fakeTables: fake.NewTableService(nil), fakeBlobs: fake.NewBlobService(nil)}
}

// caller calls one function with the env's clients and returns its error
// (the first of an iterator's).
type caller func(ctx context.Context, e *env) error

// callers holds one caller per discovered name; the tables are filled by
// the proof_*_test.go files, one per area of the API.
var callers = map[string]caller{}

func register(m map[string]caller) {
	for k, v := range m {
		if _, dup := callers[k]; dup {
			panic("two callers for " + k)
		}
		callers[k] = v
	}
}

// first returns the first error of seq.
func first[T any](seq iter.Seq2[T, error]) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

// capture is a slog handler keeping every record's text, as a JSON
// handler prints it.
type capture struct {
	mu  sync.Mutex
	buf bytes.Buffer
	h   slog.Handler
}

func newCapture() *capture {
	c := &capture{}
	c.h = slog.NewJSONHandler(&lockedWriter{c}, &slog.HandlerOptions{Level: slog.LevelDebug})
	return c
}

type lockedWriter struct{ c *capture }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return w.c.buf.Write(p)
}

func (c *capture) take() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.buf.String()
	c.buf.Reset()
	return s
}

// TestEveryContextFunctionIsCovered fails when an exported ctx function or
// method has no caller in the proof (a new function must be added to it),
// or a caller names a public function that no longer exists.
func TestEveryContextFunctionIsCovered(t *testing.T) {
	funcs, _, err := apishape.Discover("../..")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, f := range funcs {
		if f.Interface {
			continue // no body: its implementations are listed themselves
		}
		found[f.Name] = true
		if callers[f.Name] == nil {
			t.Errorf("%s: %s takes a context but the redaction proof does not call it: add a caller to internal/redact/proof_*_test.go", f.Pos, f.Name)
		}
	}
	if len(found) < 100 {
		t.Fatalf("Discover found %d functions: the walk missed packages", len(found))
	}
	for name := range callers {
		// Callers named internal/... prove internal packages that a public
		// one serves (the tablekit command's poison commands): Discover
		// walks the public packages only, and the compiler keeps them real.
		if !found[name] && !strings.HasPrefix(name, "internal/") {
			t.Errorf("the proof calls %s, which Discover no longer finds: remove its caller", name)
		}
	}
}

// TestNoSignatureLeaves calls every covered function under each failure
// and looks for the signature in the error's Error() and %+v, in every
// log record (the callers pass the capturing logger where an option takes
// one, and slog.Default is it too) and in every span's attributes and
// status (the callers pass the recording provider, and the clients carry
// it).
func TestNoSignatureLeaves(t *testing.T) {
	logs := newCapture()
	prev := slog.Default()
	slog.SetDefault(slog.New(logs.h))
	t.Cleanup(func() { slog.SetDefault(prev) })
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range callers {
			if !yield(k) {
				return
			}
		}
	})
	sdkSpans := map[string]bool{}
	var logged, ownSpans int
	seen := map[string]bool{}
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			var calls, failed int
			for _, name := range names {
				rec := &trace.Recorder{}
				e := newEnv(t, f, slog.New(logs.h), rec.Provider())
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				err := callers[name](ctx, e)
				cancel()
				calls++
				if err != nil {
					failed++
					if _, ok := knownLeaks[name]; ok {
						if leaks(err.Error()) {
							seen[name] = true
						}
						continue
					}
					if leaks(err.Error()) {
						t.Errorf("%s: Error() holds the signature: %s", name, err)
					}
					if s := fmt.Sprintf("%+v", err); leaks(s) {
						t.Errorf("%s: %%+v holds the signature: %s", name, s)
					}
				}
				s := logs.take()
				logged += len(s)
				if leaks(s) {
					t.Errorf("%s: a log record holds the signature: %s", name, firstLine(s))
				}
				for _, sp := range rec.Spans() {
					if sp.Scope == trace.Module {
						ownSpans++
					}
					if sp.Scope != trace.Module {
						// The SDK's own method spans (ServiceClient.CreateTable,
						// Client.SubmitTransaction, Pager[…].NextPage) print the
						// error's text into their status, and tablekit cannot
						// reach them: where tablekit opens a span of its own,
						// the SDK's is folded into it and never recorded.
						if leaks(sp.Description) {
							sdkSpans[sp.Name] = true
						}
						continue
					}
					if leaks(sp.Description) {
						t.Errorf("%s: span %s's status holds the signature: %s", name, sp.Name, sp.Description)
					}
					for k, v := range sp.Attributes {
						if leaks(fmt.Sprint(v)) {
							t.Errorf("%s: span %s's attribute %s holds the signature: %v", name, sp.Name, k, v)
						}
					}
				}
			}
			// Most calls must have failed, or the transport did not fail and
			// the proof proved nothing.
			if failed < calls*3/4 {
				t.Errorf("only %d of %d calls failed: the failing transport is not reached", failed, calls)
			}
			t.Logf("%d calls, %d failed, none leaked", calls, failed)
		})
	}
	// The recorders must have seen something, or their checks proved
	// nothing.
	if logged == 0 || ownSpans == 0 {
		t.Errorf("the capture saw %d bytes of logs and %d tablekit spans: a recorder is not wired", logged, ownSpans)
	}
	for name := range knownLeaks {
		if !seen[name] {
			t.Errorf("knownLeaks names %s, which leaked under no failure: remove it", name)
		}
	}
	if len(sdkSpans) > 0 {
		t.Logf("the SDK's own spans that carried the signature (outside tablekit's reach): %v", slices.Sorted(maps.Keys(sdkSpans)))
	}
}

// knownLeaks are the functions whose error still carries the signature,
// each with the file that must change and why it has not yet. An entry
// that no longer leaks fails the test, so the list cannot outlive its
// reason.
var knownLeaks = map[string]string{}

func firstLine(s string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if leaks(sc.Text()) {
			return sc.Text()
		}
	}
	return s
}

var _ = errors.New
