package fake

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tablekit/tablekit/internal/reqclass"
)

// The service's scalability targets for a standard storage account, the
// defaults of BusyOptions.
const (
	// busyPartitionTarget is the entities per second one table partition
	// serves.
	busyPartitionTarget = 2000
	// busyAccountTarget is the requests per second one account serves,
	// across its services: a table entity, a queue message and a blob
	// request each count one.
	busyAccountTarget = 20000
	// busyQueueTarget is the messages per second one queue serves.
	busyQueueTarget = 2000
	// busyBlobTarget is the requests per second one blob serves.
	busyBlobTarget = 500
	// busyIngressTarget and busyEgressTarget are the bytes per second an
	// account takes in and sends out: 60 Gbps and 120 Gbps.
	busyIngressTarget = 60e9 / 8
	busyEgressTarget  = 120e9 / 8
)

// The service's answers when a target is exceeded: the error codes and
// messages of the Azure Storage common REST API error codes.
const (
	msgServerBusy        = "The server is currently unable to receive requests. Please retry your request."
	msgAccountOperations = "Operations per second is over the account limit."
	msgAccountIngress    = "Ingress is over the account limit."
	msgAccountEgress     = "Egress is over the account limit."
	msgOperationTimedOut = "The operation could not be completed within the permitted time."
)

// BusyOptions configure a Busy account. nil means the defaults. Rates
// are per second; tests scale them down (200 entities a second per
// partition, say) to reach them in a few requests.
type BusyOptions struct {
	// PerPartition is the entities per second one table partition serves.
	// Default (zero or negative): 2,000, the service's target.
	PerPartition float64
	// PerAccount is the requests per second the account serves over all
	// the services that share the Busy: one per table entity, queue
	// message or blob request. Default: 20,000, the service's target.
	PerAccount float64
	// PerQueue is the messages per second one queue serves. Default:
	// 2,000, the service's target.
	PerQueue float64
	// PerBlob is the requests per second one blob serves. Default:
	// 500, the service's target.
	PerBlob float64
	// Ingress and Egress are the request and response body bytes per
	// second the account's blob service takes in and sends out. Defaults:
	// the service's targets, 60 Gbps and 120 Gbps.
	Ingress, Egress float64
	// Burst is how much of a second's worth each target lets through at
	// once after a quiet spell. Default (zero or negative): one second.
	Burst time.Duration
	// TimeoutEvery makes every TimeoutEvery-th answer to a request over a
	// partition's, queue's or blob's target 500 OperationTimedOut instead
	// of 503 ServerBusy, as the service answers some of them. Default
	// (zero or negative): always 503.
	TimeoutEvery int
	// Now is the clock the targets are measured on. Default: time.Now,
	// so it runs in virtual time inside a testing/synctest bubble.
	Now func() time.Time
}

// Busy is a storage account at its scalability targets. Given to the
// Busy option of a TableService, QueueService or BlobService, it makes the
// service answer a request that would exceed a target as the account does:
// 503 ServerBusy ("The server is currently unable to receive requests.
// Please retry your request." for a partition, a queue or a blob;
// "Operations per second is over the account limit.", "Ingress is over the
// account limit." or "Egress is over the account limit." for the account),
// or 500 OperationTimedOut when TimeoutEvery says so. Services that share
// one Busy share its account targets, as the services of one account do.
//
// Each target is a bucket that fills at its rate up to Burst's worth. A
// request passes when every bucket it draws on holds what it costs (or, for
// a cost above a bucket's size, is full), and then takes its cost from
// each; a refused request takes nothing, so the service recovers once the
// load falls under the targets. Costs, as the service counts them: a table
// request one entity, a transaction one per operation, a query page one
// per entity returned (charged after the page is cut, to the partition its
// filter pins, if any); a queue request one message, Get Messages and Peek
// Messages one per message asked for; a blob request one request, its body
// bytes against ingress, and a GetBlob's returned bytes against egress
// (charged after the answer). Time is read from Now on each request: no
// goroutine runs in the background. A Busy is safe for concurrent use.
type Busy struct {
	opts BusyOptions

	mu        sync.Mutex
	account   bucket
	ingress   bucket
	egress    bucket
	parts     map[string]*bucket // table partitions, queues and blobs
	swept     time.Time
	throttled int
	passed    int
	// scopedRefusals counts the refusals over a partition's, queue's or
	// blob's target, for TimeoutEvery.
	scopedRefusals int
}

// bucket is a token bucket; tokens may go negative when a charge after
// the answer (a query page, egress) exceeds what it held.
type bucket struct {
	tokens float64
	last   time.Time
	seen   bool
}

func (b *bucket) fill(now time.Time, rate, size float64) {
	if !b.seen {
		b.tokens, b.last, b.seen = size, now, true
		return
	}
	if d := now.Sub(b.last).Seconds(); d > 0 {
		b.tokens = min(size, b.tokens+d*rate)
	}
	b.last = now
}

// holds reports whether b can pay n now.
func (b *bucket) holds(n, size float64) bool {
	return b.tokens >= min(n, size)
}

// NewBusy returns an account at the targets opts sets.
func NewBusy(opts *BusyOptions) *Busy {
	b := &Busy{parts: map[string]*bucket{}}
	if opts != nil {
		b.opts = *opts
	}
	def := func(v *float64, d float64) {
		if !(*v > 0) {
			*v = d
		}
	}
	def(&b.opts.PerPartition, busyPartitionTarget)
	def(&b.opts.PerAccount, busyAccountTarget)
	def(&b.opts.PerQueue, busyQueueTarget)
	def(&b.opts.PerBlob, busyBlobTarget)
	def(&b.opts.Ingress, busyIngressTarget)
	def(&b.opts.Egress, busyEgressTarget)
	if b.opts.Burst <= 0 {
		b.opts.Burst = time.Second
	}
	if b.opts.Now == nil {
		b.opts.Now = time.Now
	}
	return b
}

// Throttled is how many requests the account refused (503 or 500).
func (b *Busy) Throttled() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.throttled
}

// Passed is how many requests the account let through to the service.
func (b *Busy) Passed() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.passed
}

// draw is one bucket a request draws on: the bucket, its rate, what the
// request costs it, and the message of its refusal.
type draw struct {
	b      *bucket
	rate   float64
	cost   float64
	msg    string
	scoped bool // a partition's, queue's or blob's target, not the account's
}

// admit takes every draw's cost, or none and returns the refusal. A draw
// of cost 0 only checks that its bucket is not overdrawn. b.mu must be
// held.
func (b *Busy) admit(draws ...draw) *svcError {
	for _, d := range draws {
		if !d.b.holds(d.cost, d.rate*b.opts.Burst.Seconds()) {
			b.throttled++
			if d.scoped {
				b.scopedRefusals++
			}
			if d.scoped && b.opts.TimeoutEvery > 0 && b.scopedRefusals%b.opts.TimeoutEvery == 0 {
				return &svcError{status: http.StatusInternalServerError, code: "OperationTimedOut", msg: msgOperationTimedOut}
			}
			return &svcError{status: http.StatusServiceUnavailable, code: "ServerBusy", msg: d.msg}
		}
	}
	for _, d := range draws {
		d.b.tokens -= d.cost
	}
	b.passed++
	return nil
}

// now reads the clock, refills the account's buckets and drops the scoped
// buckets that have refilled (they are as good as new). b.mu must be held.
func (b *Busy) now() time.Time {
	now := b.opts.Now()
	burst := b.opts.Burst.Seconds()
	b.account.fill(now, b.opts.PerAccount, b.opts.PerAccount*burst)
	b.ingress.fill(now, b.opts.Ingress, b.opts.Ingress*burst)
	b.egress.fill(now, b.opts.Egress, b.opts.Egress*burst)
	if now.Sub(b.swept) >= b.opts.Burst {
		for k, s := range b.parts {
			rate := b.rateOf(k)
			if s.tokens+now.Sub(s.last).Seconds()*rate >= rate*burst {
				delete(b.parts, k)
			}
		}
		b.swept = now
	}
	return now
}

func (b *Busy) rateOf(key string) float64 {
	switch key[0] {
	case 'q':
		return b.opts.PerQueue
	case 'b':
		return b.opts.PerBlob
	}
	return b.opts.PerPartition
}

// scoped returns the filled bucket of key ('t', 'q' or 'b' first).
// b.mu must be held.
func (b *Busy) scoped(now time.Time, key string) draw {
	s := b.parts[key]
	if s == nil {
		s = &bucket{}
		b.parts[key] = s
	}
	rate := b.rateOf(key)
	s.fill(now, rate, rate*b.opts.Burst.Seconds())
	return draw{b: s, rate: rate, msg: msgServerBusy, scoped: true}
}

func (b *Busy) accountDraw(cost float64) draw {
	return draw{b: &b.account, rate: b.opts.PerAccount, cost: cost, msg: msgAccountOperations}
}

// admitTable is the TableService's hook, after a request is counted: the
// refusal to answer with, or nil to serve it. A nil Busy admits all.
func (b *Busy) admitTable(req *http.Request, op Operation, tg target, body []byte) *svcError {
	if b == nil {
		return nil
	}
	table, pk, keyed, n := tg.table, "", false, 1.0
	switch {
	case tg.keyed && op != OpQueryTables:
		pk, keyed = tg.pk, true
	case op == OpInsertEntity:
		if e, err := parseEntity(body); err == nil {
			pk, keyed = e.pk, true
		}
	case op == OpQueryEntities:
		// A query is charged for what it returns, to the partition its
		// filter pins, if any.
		pk = reqclass.Classify(reqclass.Table, req).Partition
		keyed = pk != ""
	case op == OpBatch:
		// A transaction whose keys cannot be read is refused by the
		// service before any work, as one request.
		table, pk, keyed, n = batchKeys(body)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	draws := []draw{b.accountDraw(n)}
	if keyed {
		d := b.scoped(now, "t"+table+"\x00"+pk)
		d.cost = n
		draws = append(draws, d)
	}
	return b.admit(draws...)
}

// Landmarks of a transaction's body: the framing of each operation, the
// first operation's request line, and an entity's PartitionKey.
var (
	batchPart       = []byte("Content-Type: application/http")
	batchRequest    = regexp.MustCompile(`(?m)^(?:POST|PUT|PATCH|MERGE|DELETE) (\S+) HTTP/1\.1\r?$`)
	batchEntityPart = regexp.MustCompile(`"PartitionKey"\s*:\s*("(?:[^"\\]|\\.)*")`)
)

// batchKeys reads a transaction's table, partition and operation count
// from its body without parsing it whole (the service parses it once it
// is admitted): the table and, for an operation on one entity, the
// partition from the first operation's URL; else the partition from the
// first entity's body. keyed is false, and n 1, for a body it cannot
// read.
func batchKeys(body []byte) (table, pk string, keyed bool, n float64) {
	m := batchRequest.FindSubmatch(body)
	if m == nil {
		return "", "", false, 1
	}
	u, err := url.Parse(string(m[1]))
	if err != nil {
		return "", "", false, 1
	}
	n = float64(max(bytes.Count(body, batchPart), 1))
	table, rest, inURL := strings.Cut(strings.TrimPrefix(u.Path, "/"), "(")
	if inURL {
		if p, _, ok := parseKeys("(" + rest); ok {
			return table, p, true, n
		}
	}
	if e := batchEntityPart.FindSubmatch(body); e != nil && json.Unmarshal(e[1], &pk) == nil {
		return table, pk, true, n
	}
	return "", "", false, 1
}

// servedTable charges a query page's entities past the first (the first
// paid on admission) to the account and to the partition its filter pins.
func (b *Busy) servedTable(req *http.Request, op Operation, tg target, status int, out []byte) {
	if b == nil || op != OpQueryEntities || status != http.StatusOK {
		return
	}
	var page struct {
		Value []json.RawMessage `json:"value"`
	}
	if json.Unmarshal(out, &page) != nil || len(page.Value) <= 1 {
		return
	}
	n := float64(len(page.Value) - 1)
	pk := reqclass.Classify(reqclass.Table, req).Partition
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.account.tokens -= n
	if pk != "" {
		b.scoped(now, "t"+tg.table+"\x00"+pk).b.tokens -= n
	}
}

// admitQueue is the QueueService's hook, after a request is counted.
func (b *Busy) admitQueue(req *http.Request, op Operation, queue string) *svcError {
	if b == nil {
		return nil
	}
	n := 1.0
	if op == OpDequeue || op == OpPeek {
		if v, err := strconv.Atoi(req.URL.Query().Get("numofmessages")); err == nil && v > 0 {
			n = float64(v)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	draws := []draw{b.accountDraw(n)}
	if op != OpListQueues && queue != "" {
		d := b.scoped(now, "q"+queue)
		d.cost = n
		draws = append(draws, d)
	}
	return b.admit(draws...)
}

// admitBlob is the BlobService's hook, after a request is counted: blob
// is "" for a container's request.
func (b *Busy) admitBlob(container, blob string, bodyBytes int) *svcError {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	draws := []draw{b.accountDraw(1)}
	if bodyBytes > 0 {
		draws = append(draws, draw{b: &b.ingress, rate: b.opts.Ingress, cost: float64(bodyBytes), msg: msgAccountIngress})
	}
	// Egress is charged after the answer; a request finds it overdrawn
	// when earlier answers sent more than the account may.
	draws = append(draws, draw{b: &b.egress, rate: b.opts.Egress, msg: msgAccountEgress})
	if blob != "" {
		d := b.scoped(now, "b"+container+"/"+blob)
		d.cost = 1
		draws = append(draws, d)
	}
	return b.admit(draws...)
}

// servedBlob charges the body of a GetBlob answer to egress.
func (b *Busy) servedBlob(req *http.Request, resp *http.Response) {
	if b == nil || resp == nil || resp.ContentLength <= 0 || req.Method != http.MethodGet || resp.StatusCode/100 != 2 {
		return
	}
	if q := req.URL.Query(); q.Get("comp") != "" || q.Get("restype") != "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now()
	b.egress.tokens -= float64(resp.ContentLength)
}
