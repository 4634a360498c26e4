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

// The retry delays a fake service writes into the options of the clients it
// hands out, unless the options or SetRetryDelays say otherwise: the SDK's
// retry policy still retries exactly as it would against the service (the
// same MaxRetries, the same statuses), only its waits shrink from the SDK's
// 0.8 s doubling up to 60 s to these, so tests of failures run in
// milliseconds.
const (
	fastRetryDelay    = time.Millisecond
	fastMaxRetryDelay = 4 * time.Millisecond
)

// faults holds injected failures, request counters and the retry delays of
// the clients the service hands out; every fake service embeds one. Its
// methods lock mu, which the service also uses for its data.
type faults struct {
	mu     sync.Mutex
	counts map[Operation]int
	queue  []*fault
	// delays are the retry delays given to clients whose options set
	// none, once SetRetryDelays was called.
	delays    [2]time.Duration
	delaysSet bool
	// opFaults fail one operation inside transactions' 202 answers.
	opFaults []*opFault
}

// SetRetryDelays sets the retry delays (policy.RetryOptions RetryDelay and
// MaxRetryDelay) that the service's NewClient and NewServiceClient (and the
// queue's and blob's client constructors) write into client options that
// leave them zero. Zero for both keeps the SDK's own defaults (0.8 s and
// 60 s), as against a real account. It affects clients made after the
// call; options that set a delay themselves are never changed. Default:
// 1 ms and 4 ms.
func (f *faults) SetRetryDelays(retryDelay, maxRetryDelay time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delays, f.delaysSet = [2]time.Duration{retryDelay, maxRetryDelay}, true
}

// RetryDelays returns the retry delays the service gives its clients
// (zero: the SDK's defaults are kept); see SetRetryDelays.
func (f *faults) RetryDelays() (retryDelay, maxRetryDelay time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.delaysSet {
		return fastRetryDelay, fastMaxRetryDelay
	}
	return f.delays[0], f.delays[1]
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

// opFault fails the operation at index of the next n transactions.
type opFault struct {
	index, n int
	status   int
	code     string
}

// FailTransactionOperation makes the next n entity group transactions
// (OpBatch requests that pass the batch's own checks) answer 202 Accepted with
// the operation at index failed with status and code, as the service answers
// an operation it throttled (429, 503 ServerBusy), timed out (408, 500
// OperationTimedOut) or refused: the whole transaction rolls back, and the
// answer names the failed operation's index. The SDK's retry policy sees the
// 202 and does not retry. An index past a transaction's last operation names
// the last one.
func (f *faults) FailTransactionOperation(index, n, status int, code string) {
	if n <= 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opFaults = append(f.opFaults, &opFault{index: index, n: n, status: status, code: code})
}

// transactionFault returns the failure the next transaction of ops
// operations must answer with, if FailTransactionOperation queued one: the
// failed operation's index and its error. f.mu must be held.
func (f *faults) transactionFault(ops int) (int, *svcError) {
	if len(f.opFaults) == 0 {
		return 0, nil
	}
	ft := f.opFaults[0]
	ft.n--
	if ft.n == 0 {
		f.opFaults = f.opFaults[1:]
	}
	return min(ft.index, ops-1), errf(ft.status, ft.code, "The operation failed: %s.", http.StatusText(ft.status))
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
// transport and, where the options leave them zero, sets the SDK's retry
// delays to the service's RetryDelays (the retries themselves are kept, as
// the service sees them). Every fake service embeds faults, so t always
// has RetryDelays.
func serveWith(co *azcore.ClientOptions, t policy.Transporter) {
	co.Transport = t
	d, ok := t.(interface {
		RetryDelays() (time.Duration, time.Duration)
	})
	if !ok {
		return
	}
	delay, maxDelay := d.RetryDelays()
	if co.Retry.RetryDelay == 0 {
		co.Retry.RetryDelay = delay
	}
	if co.Retry.MaxRetryDelay == 0 {
		co.Retry.MaxRetryDelay = maxDelay
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
