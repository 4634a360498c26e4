package fake

import (
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Operation names a kind of request, for counters and fault injection.
type Operation string

// faults holds injected failures and request counters; every fake service
// embeds one. Its methods lock mu, which the service also uses for its data.
type faults struct {
	mu     sync.Mutex
	counts map[Operation]int
	queue  []*fault
}

type fault struct {
	op     Operation
	skip   int // requests of op to let through first
	n      int
	status int
	code   string
}

// FailNext makes the next n requests of op fail with status and code before
// they touch any data.
func (f *faults) FailNext(op Operation, n, status int, code string) {
	f.FailNextAfter(op, 0, n, status, code)
}

// FailNextAfter lets skip requests of op through, then fails the n after
// them with status and code, before they touch any data.
func (f *faults) FailNextAfter(op Operation, skip, n, status int, code string) {
	if n <= 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append(f.queue, &fault{op: op, skip: skip, n: n, status: status, code: code})
}

// Count is how many requests of op the service has received.
func (f *faults) Count(op Operation) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[op]
}

// Total is how many requests the service has received.
func (f *faults) Total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.counts {
		n += c
	}
	return n
}

// Counts is a copy of the per-operation counters.
func (f *faults) Counts() map[Operation]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[Operation]int, len(f.counts))
	for k, v := range f.counts {
		out[k] = v
	}
	return out
}

// ResetCounts sets every counter to zero.
func (f *faults) ResetCounts() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.counts)
}

// arrive counts a request of op and returns the fault it must answer with,
// if any. f.mu must be held.
func (f *faults) arrive(op Operation) *fault {
	if f.counts == nil {
		f.counts = map[Operation]int{}
	}
	f.counts[op]++
	for i, ft := range f.queue {
		if ft.op != op {
			continue
		}
		if ft.skip > 0 {
			ft.skip--
			return nil
		}
		ft.n--
		if ft.n == 0 {
			f.queue = slices.Delete(f.queue, i, i+1)
		}
		return ft
	}
	return nil
}

// canonicalHeaders rewrites a request's header keys as an HTTP server would
// see them: the SDK's generated code sets some keys directly in lower case.
func canonicalHeaders(req *http.Request) {
	h := make(http.Header, len(req.Header))
	for k, v := range req.Header {
		ck := http.CanonicalHeaderKey(k)
		h[ck] = append(h[ck], v...)
	}
	req.Header = h
}

// serveWith points a fake's client options at the fake: it replaces the
// transport and, unless set, shortens the SDK's retry delays to
// milliseconds (the retries themselves are kept, as the service sees them).
func serveWith(co *azcore.ClientOptions, t policy.Transporter) {
	co.Transport = t
	if co.Retry.RetryDelay == 0 {
		co.Retry.RetryDelay = time.Millisecond
	}
	if co.Retry.MaxRetryDelay == 0 {
		co.Retry.MaxRetryDelay = 4 * time.Millisecond
	}
}

// readRequest prepares a request as a server sees it: canonical header
// keys, and the body read whole.
func readRequest(req *http.Request) ([]byte, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	canonicalHeaders(req)
	if req.Body == nil {
		return nil, nil
	}
	defer req.Body.Close()
	return io.ReadAll(req.Body)
}
