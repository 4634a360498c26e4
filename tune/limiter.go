package tune

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit/ledger"
)

// The service's scalability targets for one storage account's tables.
const (
	// PartitionTarget is the entities per second one partition serves.
	PartitionTarget = 2000
	// AccountTarget is the entities per second one account serves.
	AccountTarget = 20000
)

// LimiterOptions configure a Limiter. nil means the defaults.
type LimiterOptions struct {
	// PerPartition and PerAccount are the rates kept under, in entities per
	// second. Defaults: PartitionTarget and AccountTarget.
	PerPartition, PerAccount float64
	// Now and Sleep are the clock. Defaults: time.Now and a context-aware
	// sleep.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// Limiter is an azcore per-call policy for table clients that delays
// requests so a process stays under the service's targets, so the service
// does not have to answer 503 Server Busy. It counts entities as the
// service does: one per single-entity request and per query page, and one
// per operation of a transaction. Bursts of up to one second's worth pass
// at once. Safe for concurrent use; share one Limiter among all the
// clients of an account.
type Limiter struct {
	perPart, perAcct float64
	now              func() time.Time
	sleep            func(context.Context, time.Duration) error

	mu      sync.Mutex
	account bucket
	parts   map[string]*bucket
}

// bucket is a token bucket whose tokens may go negative: a reservation.
type bucket struct {
	tokens float64
	last   time.Time
}

func (b *bucket) reserve(now time.Time, rate float64, n float64) time.Duration {
	if b.last.IsZero() {
		b.tokens, b.last = rate, now
	}
	b.tokens = min(rate, b.tokens+now.Sub(b.last).Seconds()*rate)
	b.last = now
	b.tokens -= n
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / rate * float64(time.Second))
}

// NewLimiter returns a Limiter.
func NewLimiter(opts *LimiterOptions) *Limiter {
	l := &Limiter{perPart: PartitionTarget, perAcct: AccountTarget, now: time.Now, parts: map[string]*bucket{},
		sleep: func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				return nil
			}
		}}
	if opts != nil {
		if opts.PerPartition > 0 {
			l.perPart = opts.PerPartition
		}
		if opts.PerAccount > 0 {
			l.perAcct = opts.PerAccount
		}
		if opts.Now != nil {
			l.now = opts.Now
		}
		if opts.Sleep != nil {
			l.sleep = opts.Sleep
		}
	}
	return l
}

var (
	pkInBody  = regexp.MustCompile(`"PartitionKey"\s*:\s*"((?:[^"\\]|\\.)*)"`)
	opsInBody = []byte("Content-Type: application/http")
)

// Do waits as long as the request's entities need, then sends it.
func (l *Limiter) Do(req *policy.Request) (*http.Response, error) {
	key := ledger.Classify(ledger.Table, req.Raw())
	n, pk := 1.0, key.Partition
	if key.Operation == "Batch" || key.Operation == "InsertEntity" {
		if body := req.Body(); body != nil {
			b, _ := io.ReadAll(body)
			_ = req.RewindBody()
			if key.Operation == "Batch" {
				n = float64(max(bytes.Count(b, opsInBody), 1))
			}
			if m := pkInBody.FindSubmatch(b); m != nil {
				pk = string(m[1])
			}
		}
	}
	l.mu.Lock()
	now := l.now()
	wait := l.account.reserve(now, l.perAcct, n)
	if pk != "" {
		b := l.parts[key.Resource+"\x00"+pk]
		if b == nil {
			b = &bucket{}
			l.parts[key.Resource+"\x00"+pk] = b
		}
		wait = max(wait, b.reserve(now, l.perPart, n))
	}
	l.mu.Unlock()
	if wait > 0 {
		if err := l.sleep(req.Raw().Context(), wait); err != nil {
			return nil, err
		}
	}
	return req.Next()
}

var _ policy.Policy = (*Limiter)(nil)
