package tune

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// The constants of the adaptive rate's CUBIC curve.
const (
	// cubicBeta is the share of the rate kept at a decrease, as in TCP
	// CUBIC and aws-sdk-go-v2's adaptive retry mode.
	cubicBeta = 0.7
	// cubicK is how long after a decrease from wMax the curve is back at
	// wMax, whatever wMax is: the curve is wMax*(1+c*(t-cubicK)^3) with
	// c = (1-cubicBeta)/cubicK^3. aws-sdk-go-v2 fixes the constant c
	// instead (0.4, in requests per second), under which recovery takes
	// longer the higher the rate: fit for a client's few requests a
	// second, slow for the thousands of entities a second of a table.
	cubicK = 4 * time.Second
	// minAdaptiveRate is the lowest rate a decrease leaves, in entities
	// per second.
	minAdaptiveRate = 0.5
	// adaptiveBurst is how much of a second's worth of the rate may go
	// out at once: a tenth, so that sends after a decrease are spread out
	// rather than bunched.
	adaptiveBurst = 100 * time.Millisecond
	// measureSlots and measureSlot make the window over which accepted
	// entities are counted: one second, in tenths.
	measureSlots = 10
	measureSlot  = 100 * time.Millisecond
)

// AdaptiveOptions configure an Adaptive rate. nil means the defaults.
type AdaptiveOptions struct {
	// PerPartition and PerAccount are the ceilings of the rates, in
	// entities per second: the rate a partition or the account starts at
	// and never exceeds, as a Limiter's fixed rates. Defaults (zero or
	// negative): PartitionTarget and AccountTarget.
	PerPartition, PerAccount float64
	// Now and Sleep are the clock. Defaults: time.Now and a context-aware
	// sleep (both run in virtual time in a testing/synctest bubble).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// Adaptive is an azcore policy for table clients that finds the rate the
// service will take: a per-partition and a per-account rate, each lowered
// when the service answers that it is over a target and raised back while
// its answers are clean, never above the ceilings (the algorithm is in the
// package documentation). Put it among a client's PerRetryPolicies
// (aztables.ClientOptions.PerRetryPolicies, beside table.ClientOptions),
// so that it runs once per try, after the SDK's retry policy, which stays
// the only one that retries.
//
// It counts entities as Limiter does: one per single-entity request, one
// per entity of a query page (a batched read's RowKeys before it goes),
// one per operation of a transaction.
//
// Safe for concurrent use; share one Adaptive among the clients of an
// account.
type Adaptive struct {
	perPart, perAcct float64
	now              func() time.Time
	sleep            func(context.Context, time.Duration) error

	mu      sync.Mutex
	account flow
	parts   map[string]*flow
	swept   time.Time
}

// flow is one adaptive rate: a token bucket whose fill rate follows a
// CUBIC curve, and the count of entities the service accepted over the
// last second.
type flow struct {
	ceiling float64
	rate    float64

	cut  bool      // a decrease happened
	tCut time.Time // the last decrease
	wMax float64   // the rate before it

	tokens float64 // may go negative: a reservation
	last   time.Time

	slots [measureSlots]float64 // accepted entities per tenth of a second
	slot  int64                 // the tenth slots[slot%measureSlots] counts
}

func newFlow(ceiling float64) *flow { return &flow{ceiling: ceiling, rate: ceiling} }

// curve is the rate the CUBIC curve gives at now, before the demand cap.
func (f *flow) curve(now time.Time) float64 {
	if !f.cut {
		return f.ceiling
	}
	k := cubicK.Seconds()
	t := now.Sub(f.tCut).Seconds() - k
	return min(f.ceiling, max(minAdaptiveRate, f.wMax*(1+(1-cubicBeta)/(k*k*k)*t*t*t)))
}

// advance moves the measurement window to now's tenth, clearing the
// tenths that passed.
func (f *flow) advance(now time.Time) {
	s := now.UnixNano() / int64(measureSlot)
	if s <= f.slot {
		return
	}
	for i := f.slot + 1; i <= s && i <= f.slot+measureSlots; i++ {
		f.slots[i%measureSlots] = 0
	}
	f.slot = s
}

// measured is the entities the service accepted over the last second.
func (f *flow) measured(now time.Time) float64 {
	f.advance(now)
	var n float64
	for _, v := range f.slots {
		n += v
	}
	return n
}

// update sets the rate the curve gives at now. Above the rate of the last
// decrease the curve is probing for more: it may not run past twice what
// the service accepted over the last second, so a flow that is not used
// at its rate does not climb to a rate it has never tried.
func (f *flow) update(now time.Time) {
	r := f.curve(now)
	if f.cut && r > f.wMax {
		r = max(f.wMax, min(r, 2*f.measured(now)))
	}
	f.rate = r
}

// accept counts n entities the service accepted and updates the rate.
func (f *flow) accept(now time.Time, n float64) {
	f.advance(now)
	f.slots[f.slot%measureSlots] += n
	f.update(now)
}

// decrease lowers the rate after a throttling answer to a request paced
// at sent. Answers to requests paced before the last decrease are of the
// same overload and do not lower it again.
func (f *flow) decrease(now, sent time.Time) {
	if f.cut && sent.Before(f.tCut) {
		return
	}
	base := f.rate
	if m := f.measured(now); m > 0 {
		base = min(base, m)
	}
	f.cut, f.tCut, f.wMax = true, now, base
	f.rate = max(minAdaptiveRate, base*cubicBeta)
}

// reserve takes n entities from the bucket and returns the wait before
// they may go.
func (f *flow) reserve(now time.Time, n float64) time.Duration {
	size := max(f.rate*adaptiveBurst.Seconds(), 1)
	if f.last.IsZero() {
		f.tokens, f.last = size, now
	}
	if d := now.Sub(f.last).Seconds(); d > 0 {
		f.tokens = min(size, f.tokens+d*f.rate)
	}
	f.last = now
	f.tokens -= n
	if f.tokens >= 0 {
		return 0
	}
	return time.Duration(-f.tokens / f.rate * float64(time.Second))
}

// idle reports whether f behaves at now as a new flow: its curve is back
// at the ceiling and its bucket full.
func (f *flow) idle(now time.Time) bool {
	return f.curve(now) >= f.ceiling && f.tokens+now.Sub(f.last).Seconds()*f.ceiling >= f.ceiling*adaptiveBurst.Seconds()
}

// NewAdaptive returns an Adaptive at its ceilings.
func NewAdaptive(opts *AdaptiveOptions) *Adaptive {
	lim := NewLimiter(nil) // for its defaults
	a := &Adaptive{perPart: lim.perPart, perAcct: lim.perAcct, now: lim.now, sleep: lim.sleep, parts: map[string]*flow{}}
	if opts != nil {
		if opts.PerPartition > 0 {
			a.perPart = opts.PerPartition
		}
		if opts.PerAccount > 0 {
			a.perAcct = opts.PerAccount
		}
		if opts.Now != nil {
			a.now = opts.Now
		}
		if opts.Sleep != nil {
			a.sleep = opts.Sleep
		}
	}
	a.account = *newFlow(a.perAcct)
	return a
}

// partition returns the flow of a partition, making it. a.mu must be held.
func (a *Adaptive) partition(now time.Time, table, pk string) *flow {
	if now.Sub(a.swept) >= time.Second {
		for k, f := range a.parts {
			if f.idle(now) {
				delete(a.parts, k)
			}
		}
		a.swept = now
	}
	k := table + "\x00" + pk
	f := a.parts[k]
	if f == nil {
		f = newFlow(a.perPart)
		a.parts[k] = f
	}
	return f
}

// Rate is the rate, in entities per second, that requests to a partition
// of table go out at now: the lower of the partition's and the account's.
// With partitionKey "", the account's.
func (a *Adaptive) Rate(table, partitionKey string) float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	a.account.update(now)
	if partitionKey == "" {
		return a.account.rate
	}
	f := a.partition(now, table, partitionKey)
	f.update(now)
	return min(f.rate, a.account.rate)
}

// Partitions is how many partitions' rates the Adaptive holds now: those
// whose rate is below the ceiling or whose bucket has not refilled.
func (a *Adaptive) Partitions() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.parts)
}

// reserve takes n entities from the account's bucket and the partition's
// and returns the wait before they may go.
func (a *Adaptive) reserve(table, pk string, n float64) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	wait := a.account.reserve(now, n)
	if pk != "" {
		wait = max(wait, a.partition(now, table, pk).reserve(now, n))
	}
	return wait
}

// answer records the service's answer to n entities sent at sent: accepted
// (throttled false), or throttled, the account (account true) or the
// partition over its target.
func (a *Adaptive) answer(table, pk string, n float64, sent time.Time, throttled, account bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	var part *flow
	if pk != "" {
		part = a.partition(now, table, pk)
	}
	switch {
	case !throttled:
		a.account.accept(now, n)
		if part != nil {
			part.accept(now, n)
		}
	case account || part == nil:
		a.account.decrease(now, sent)
	default:
		part.decrease(now, sent)
	}
}

// Do waits as long as the request's entities need at the current rates,
// sends it, and adjusts the rates by the answer.
func (a *Adaptive) Do(req *policy.Request) (*http.Response, error) {
	key, pk, n := entities(req)
	// A request is of the rate it was paced by: the time it reserved its
	// entities, not the time it left, tells whether a throttling answer
	// to it comes from before or after the last decrease.
	sent := a.now()
	if wait := a.reserve(key.Resource, pk, n); wait > 0 {
		if err := a.sleep(req.Raw().Context(), wait); err != nil {
			return nil, err
		}
	}
	resp, err := req.Next()
	if err != nil {
		return resp, err
	}
	throttled, account := throttling(resp, key.Operation == "Batch")
	if key.Operation == "QueryEntities" && !throttled && resp.StatusCode == http.StatusOK && resp.Body != nil {
		// The page's entities are known once it is read: those it may
		// hold were reserved (one, or a batched read's RowKeys), any
		// more are reserved (as debt) and all are counted then.
		resp.Body = &pageCounter{body: resp.Body, charge: func(got int) {
			if float64(got) > n {
				a.reserve(key.Resource, pk, float64(got)-n)
			}
			a.answer(key.Resource, pk, float64(max(got, 1)), sent, false, false)
		}}
		return resp, nil
	}
	a.answer(key.Resource, pk, n, sent, throttled, account)
	return resp, nil
}

// Markers of a throttling answer in a response body: the error code of a
// timeout, the account-limit messages, and the status lines of a
// transaction's failed operation.
var (
	codeTimedOut     = []byte("OperationTimedOut")
	overAccountLimit = []byte("over the account limit")
	innerThrottled   = [][]byte{[]byte("HTTP/1.1 503 "), []byte("HTTP/1.1 429 ")}
	innerTimedOut    = []byte("HTTP/1.1 500 ")
)

// throttling reports whether resp is a throttling answer, and whether it
// names the account's limit. It reads the body of a 503, a 500, and a
// transaction's 202, and puts it back for the policies before it.
func throttling(resp *http.Response, transaction bool) (throttled, account bool) {
	status := resp.StatusCode
	if status != http.StatusServiceUnavailable && status != http.StatusTooManyRequests && status != http.StatusInternalServerError &&
		!(transaction && status == http.StatusAccepted) {
		return false, false
	}
	var body []byte
	if resp.Body != nil {
		body, _ = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	switch status {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		throttled = true
	case http.StatusInternalServerError:
		throttled = bytes.Contains(body, codeTimedOut)
	case http.StatusAccepted:
		for _, m := range innerThrottled {
			throttled = throttled || bytes.Contains(body, m)
		}
		throttled = throttled || bytes.Contains(body, innerTimedOut) && bytes.Contains(body, codeTimedOut)
	}
	return throttled, throttled && bytes.Contains(body, overAccountLimit)
}

var _ policy.Policy = (*Adaptive)(nil)
