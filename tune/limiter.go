package tune

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/tablekit/tablekit/internal/reqclass"
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
	// second. Defaults (zero or negative): PartitionTarget and AccountTarget.
	PerPartition, PerAccount float64
	// Now and Sleep are the clock. Defaults: time.Now and a context-aware
	// sleep.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// Limiter is an azcore per-call policy for table clients that delays
// requests so a process stays under the service's targets, so the service
// does not have to answer 503 Server Busy. It counts entities as the
// service does: one per single-entity request, one per entity of a query
// page (a batched read's RowKeys before it goes, the rest once its page is
// read), and one per operation of a transaction. Bursts of up to one second's worth pass
// at once. Safe for concurrent use; share one Limiter among all the
// clients of an account.
type Limiter struct {
	perPart, perAcct float64
	now              func() time.Time
	sleep            func(context.Context, time.Duration) error

	mu      sync.Mutex
	account bucket
	parts   map[string]*bucket
	swept   time.Time // when parts was last cleared of refilled buckets
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

// full reports whether b has refilled by now: it then behaves exactly as a
// new bucket, so it can be dropped.
func (b *bucket) full(now time.Time, rate float64) bool {
	return b.tokens+now.Sub(b.last).Seconds()*rate >= rate
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
	// subRequest is the request line of a transaction's operation.
	subRequest = regexp.MustCompile(`(?m)^(POST|PUT|PATCH|MERGE|DELETE) (\S+) HTTP/1\.1\r?$`)
)

// entities names a table request as the service counts it: its
// classification (with, for a transaction, the table its operations
// name), its partition (read from the body for a transaction or an
// insert) and its entities (one per operation of a transaction, as many
// as a query's page may hold when its filter names its RowKeys, else
// one; a query's page is counted as it is read, and what it holds past
// this is charged then).
func entities(req *policy.Request) (key reqclass.Request, pk string, n float64) {
	key = reqclass.Classify(reqclass.Table, req.Raw())
	n, pk = 1.0, key.Partition
	if key.Operation == "QueryEntities" {
		n = float64(max(keyedPage(req.Raw().URL.Query()), 1))
	}
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
			if key.Operation == "Batch" {
				// The $batch URL names no table: the first operation's
				// request line does (and, for a delete, the partition).
				if m := subRequest.FindSubmatch(b); m != nil {
					if u, err := url.Parse(string(m[2])); err == nil {
						sub := reqclass.Classify(reqclass.Table, &http.Request{Method: string(m[1]), URL: u})
						key.Resource = sub.Resource
						if pk == "" {
							pk = sub.Partition
						}
					}
				}
			}
		}
	}
	return key, pk, n
}

// rowKeyEq marks one RowKey a filter names.
const rowKeyEq = "RowKey eq '"

// keyedPage is the most entities a query's page may hold when its filter
// names RowKeys (a batched read: PartitionKey eq 'p' and (RowKey eq 'a'
// or …)): one per RowKey named, no more than $top. It is 0 for a filter
// that names none, whose page is known only once read. Reserving a
// batched read's entities before it goes, as a transaction's are, keeps
// reads in flight at once from overrunning a partition's rate: each would
// otherwise pass for one entity and bring back as many as it names.
func keyedPage(q url.Values) int {
	n := strings.Count(q.Get("$filter"), rowKeyEq)
	if top, err := strconv.Atoi(q.Get("$top")); err == nil && top > 0 {
		n = min(n, top)
	}
	return n
}

// Do waits as long as the request's entities need, then sends it.
func (l *Limiter) Do(req *policy.Request) (*http.Response, error) {
	key, pk, n := entities(req)
	wait := l.Reserve(key.Resource, pk, n)
	if wait > 0 {
		if err := l.sleep(req.Raw().Context(), wait); err != nil {
			return nil, err
		}
	}
	resp, err := req.Next()
	if err == nil && key.Operation == "QueryEntities" && resp.Body != nil && resp.StatusCode == http.StatusOK {
		resp.Body = &pageCounter{body: resp.Body, charge: func(got int) {
			if float64(got) > n {
				l.Reserve(key.Resource, pk, float64(got)-n)
			}
		}}
	}
	return resp, err
}

// etagName marks one entity in a query page: with minimal metadata (the
// SDK's default and tablekit's) every entity carries its odata.etag.
var etagName = []byte(`"odata.etag"`)

// pageCounter counts a query page's entities as the body is read, with no
// copy, and charges them once, at the end of the body or on Close.
type pageCounter struct {
	body    io.ReadCloser
	charge  func(n int)
	n       int
	carry   []byte // the tail of the last read, for a name split across reads
	charged bool
}

func (p *pageCounter) Read(b []byte) (int, error) {
	n, err := p.body.Read(b)
	if n > 0 {
		// Count in carry+b[:n] without copying b: names wholly in b, plus
		// those that straddle the boundary (start in carry, end in b).
		// carry holds fewer bytes than a name, and so does the head of b
		// joined to it: neither count can see a name twice.
		keep := len(etagName) - 1
		p.n += bytes.Count(b[:n], etagName)
		joint := append(p.carry, b[:min(n, keep)]...)
		p.n += bytes.Count(joint, etagName)
		if n >= keep {
			p.carry = append(p.carry[:0], b[n-keep:n]...)
		} else {
			// A short read: the new tail spans the old carry and b.
			p.carry = append(p.carry[:0], joint[max(0, len(joint)-keep):]...)
		}
	}
	if err == io.EOF {
		p.done()
	}
	return n, err
}

func (p *pageCounter) Close() error {
	p.done()
	return p.body.Close()
}

func (p *pageCounter) done() {
	if !p.charged {
		p.charged = true
		p.charge(p.n)
	}
}

// Reserve takes n entities (n > 0; otherwise it does nothing) from the
// account's budget and, when
// partitionKey is not "", from that partition's of table, and returns how
// long the caller must wait before sending them. The policy calls it for
// every request; call it yourself for work that does not go through a
// client the Limiter is attached to.
func (l *Limiter) Reserve(table, partitionKey string, n float64) time.Duration {
	if !(n > 0) {
		// Nothing to send costs nothing, and must not credit a budget.
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.Sub(l.swept) >= time.Second {
		// Amortised: at most one pass a second over the buckets in use.
		for k, b := range l.parts {
			if b.full(now, l.perPart) {
				delete(l.parts, k)
			}
		}
		l.swept = now
	}
	wait := l.account.reserve(now, l.perAcct, n)
	if partitionKey != "" {
		k := table + "\x00" + partitionKey
		b := l.parts[k]
		if b == nil {
			b = &bucket{}
			l.parts[k] = b
		}
		wait = max(wait, b.reserve(now, l.perPart, n))
	}
	return wait
}

// Partitions is how many partitions' budgets the Limiter holds now.
func (l *Limiter) Partitions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.parts)
}

var _ policy.Policy = (*Limiter)(nil)
