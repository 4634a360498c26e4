// Package wirepolicy is tablekit's per-call azcore policy: it lets table
// and batch send request bodies they built themselves, and read raw
// response bodies, through a client's own pipeline. It lives apart from
// table so that fake, which table's tests import, can put it in the
// clients it builds without importing table.
package wirepolicy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// Policy is tablekit's per-call policy (table.ClientOptions adds it).
type Policy struct{}

// Add puts Policy first among co's per-call policies, unless it or Off is
// there already; the slice is copied, so the caller's is left as it was.
// First, so that every other policy sees the request as it is sent (the
// body tablekit built) and never sees a probe.
func Add(co *azcore.ClientOptions) {
	for _, p := range co.PerCallPolicies {
		switch p.(type) {
		case Policy, Off:
			return
		}
	}
	co.PerCallPolicies = append(append(make([]policy.Policy, 0, len(co.PerCallPolicies)+1), Policy{}), co.PerCallPolicies...)
}

// Off, among a client's per-call policies, keeps Add from adding Policy:
// tests use it to build a client that takes the SDK's path from a
// constructor that would add the policy (the fake's). It passes every
// request on untouched.
type Off struct{}

// Do passes req on.
func (Off) Do(req *policy.Request) (*http.Response, error) { return req.Next() }

// ErrProbeAnswered is the policy's answer to a probe (Exchange.Probe).
var ErrProbeAnswered = errors.New("tablekit: the wire path's probe, answered by the policy")

type key struct{}

// Exchange is one request routed through tablekit's policy: what tablekit
// asks the policy to send, and what the policy saw come back: table uses
// it for reads, batch for transactions.
type Exchange struct {
	// Body, when set, builds the request body (and its Content-Type) that
	// replaces the SDK's; tableURL is the table's URL as the SDK's own
	// request names it, read from the first request line of the SDK's
	// body (the placeholder's, or any operation's). A $batch request only.
	Body func(tableURL string) (body []byte, contentType string)
	// Invoked is set when the policy saw the request: false after the call
	// means the client does not have the policy.
	Invoked bool
	// Status, Header and Response are the service's final answer (after
	// the SDK's retries), set when one came back.
	Status   int
	Header   http.Header
	Response []byte

	// Probe: HasPath's call; the policy answers it itself
	// (ErrProbeAnswered) and sends nothing.
	Probe bool
}

// With marks the requests made with the returned context for the policy.
func With(ctx context.Context, x *Exchange) context.Context {
	return context.WithValue(ctx, key{}, x)
}

// Do acts on marked requests only.
func (Policy) Do(req *policy.Request) (*http.Response, error) {
	x, _ := req.Raw().Context().Value(key{}).(*Exchange)
	if x == nil {
		return req.Next()
	}
	x.Invoked = true
	if x.Probe {
		return nil, ErrProbeAnswered
	}
	batchReq := x.Body != nil
	if batchReq {
		u, err := tableURL(req.Body())
		if err != nil {
			return nil, err
		}
		body, ct := x.Body(u)
		if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), ct); err != nil {
			return nil, err
		}
	}
	resp, err := req.Next()
	if err != nil || resp == nil {
		return resp, err
	}
	payload, err := runtime.Payload(resp)
	if err != nil {
		return resp, err
	}
	x.Status, x.Header, x.Response = resp.StatusCode, resp.Header, payload
	switch {
	case batchReq && resp.StatusCode == http.StatusAccepted && !batchFailed(payload):
		// tablekit reads the ETags from x.Response; the SDK, which only
		// looks for a failed part, gets a one-part answer to parse.
		return withBody(resp, emptyBatchAnswer), nil
	case !batchReq && resp.StatusCode == http.StatusOK && strings.HasSuffix(req.Raw().URL.Path, "()"):
		// A query page ("<table>()"): tablekit decodes x.Response straight
		// into its values; the SDK's pager, which would decode every
		// entity into a map and marshal it again, gets an empty page with
		// the same continuation headers.
		return withBody(resp, emptyPage), nil
	case !batchReq && resp.StatusCode == http.StatusOK:
		// A point read ("<table>(PartitionKey='…',RowKey='…')"): the SDK's
		// GetEntity decodes the body into a map and marshals it again, so
		// it gets the empty object, the least work it can do (an empty
		// page cost it a slice inside the map, both ways).
		return withBody(resp, emptyEntity), nil
	}
	// Errors reach the SDK as the service sent them, so that its
	// *azcore.ResponseError carries the real status, code and body.
	return resp, nil
}

// The bodies handed to the SDK in place of the service's (constants: no
// package-level mutable state).
const (
	emptyPage        = `{"value":[]}`
	emptyEntity      = `{}`
	emptyBatchAnswer = "--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n\r\n--c--\r\n--b--\r\n"
)

// withBody is resp with another body; resp itself (which the policies
// after this one logged) is left as it was.
func withBody(resp *http.Response, body string) *http.Response {
	r := *resp
	r.Body = io.NopCloser(strings.NewReader(body))
	r.ContentLength = int64(len(body))
	return &r
}

var errNoOperation = errors.New("tablekit: wire path: the $batch request holds no operation")

// tableURL reads the table's URL from the request line of the first
// operation in the SDK's $batch body (the placeholder's, or any action's:
// "METHOD <table URL>[(PartitionKey=…)][?query] HTTP/1.1"). Only request
// lines hold " HTTP/1.1\r\n"; a table URL holds neither "(" nor "?".
func tableURL(body io.ReadSeekCloser) (string, error) {
	if body == nil {
		return "", errNoOperation
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return "", err
	}
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	end := bytes.Index(b, []byte(" HTTP/1.1\r\n"))
	if end < 0 {
		return "", errNoOperation
	}
	line := b[bytes.LastIndexByte(b[:end], '\n')+1 : end]
	_, u, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(u) == 0 {
		return "", errNoOperation
	}
	if k := bytes.IndexAny(u, "(?"); k >= 0 {
		u = u[:k]
	}
	return string(u), nil
}

// batchFailed reports whether any operation's response in a $batch answer
// has a 4xx or 5xx status line.
func batchFailed(b []byte) bool {
	const line = "\nHTTP/1.1 "
	for {
		i := bytes.Index(b, []byte(line))
		if i < 0 {
			return false
		}
		b = b[i+len(line):]
		if len(b) > 0 && (b[0] == '4' || b[0] == '5') {
			return true
		}
	}
}

// Getter is the one method of table.Client that HasPath calls.
type Getter interface {
	GetEntity(ctx context.Context, partitionKey, rowKey string, options *aztables.GetEntityOptions) (aztables.GetEntityResponse, error)
}

// HasPath reports whether client's pipeline holds the policy. It asks the
// policy with a marked call that the policy, first among the per-call
// policies, answers itself: with the policy nothing leaves the process.
// Without it the call's context is already cancelled, so net/http's
// transport refuses it and nothing reaches the service (a counting policy,
// such as a ledger, sees one try). The call opens no span: it runs as if
// inside an SDK span, which suppresses the SDK's own. Callers cache the
// answer per client: it never changes.
func HasPath(client Getter) bool {
	x := &Exchange{Probe: true}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	silent := tracing.NewTracer(func(ctx context.Context, _ string, _ *tracing.SpanOptions) (context.Context, tracing.Span) {
		return ctx, tracing.Span{}
	}, nil)
	ctx, end := runtime.StartSpan(ctx, "tablekit.probe", silent, nil)
	defer end(nil)
	_, _ = client.GetEntity(With(ctx, x), "p", "r", nil)
	return x.Invoked
}
