package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/sameprops"
	"github.com/tablekit/tablekit/internal/trace"
	"github.com/tablekit/tablekit/table"
)

// Defaults and bounds of the Writer. Parallelism 8 keeps both cores busy
// encoding while requests wait on the network; see BENCHMARKS.md for the
// measurement. Past 32 the client's connection pool and the service's
// per-partition targets, not tablekit, limit throughput.
const (
	defaultParallelism = 8
	maxParallelism     = 32
)

// WriterOptions configure a Writer. nil means the defaults.
type WriterOptions struct {
	// Parallelism is how many transactions are in flight at once, each on
	// a different partition. 1 to 32 (more is capped there: past 32 the
	// client's connection pool and the service's per-partition targets,
	// not tablekit, limit throughput). Default (0): 8, which keeps two
	// cores busy encoding while requests wait; negative: Write fails with
	// ErrBadOption before any request.
	Parallelism int
	// MaxAttempts bounds the sends of one transaction whose failed
	// operation the service reports as throttled or timed out (408, 429,
	// 5xx) inside its 202 answer: the SDK's retry policy sees a 202 and
	// cannot retry that, so the Writer does. Nothing else is resent by the
	// Writer: a whole-request 408, 429 or 5xx, a timeout and a lost
	// connection are retried by the client's own retry policy
	// (azcore policy.RetryOptions: MaxRetries, RetryDelay, TryTimeout),
	// once, and configured there. Default (0): 5; negative: Write fails
	// with ErrBadOption before any request.
	MaxAttempts int
	// BaseDelay and MaxDelay shape the exponential back-off with jitter
	// before such a resend: each wait is between half and all of a delay
	// that starts at BaseDelay and doubles up to MaxDelay. The resend goes
	// through the client's pipeline, so a tune.Limiter or tune.Adaptive
	// there spaces it further. Defaults: 100 ms and 5 s.
	BaseDelay, MaxDelay time.Duration
	// Progress, when set, is called after each transaction, from the
	// writer's goroutines (one call at a time).
	Progress func(Summary)
	// Logger receives a debug record per retry and a warning per failure.
	// Default: no logging.
	Logger *slog.Logger
	// IdempotentAdds makes a transaction of Adds that fails with
	// EntityAlreadyExists count as committed when every one of its
	// entities is already stored exactly as sent (the same properties
	// with the same values),
	// as after a retry whose first response was lost: the SDK retried, the
	// service answered 409, yet the transaction was committed. The check
	// is one range query over the transaction's RowKeys. The price: a batch
	// someone else stored identically also counts. Default: false, a 409
	// fails the transaction.
	IdempotentAdds bool
	// MaxBufferedBytes bounds the encoded operations the Writer holds that
	// are not in flight: those of partitions whose transaction is not yet
	// full, and full transactions waiting for a sender. When it is reached
	// the Writer sends the largest partial transactions (so input spread
	// over many partitions costs more, smaller transactions rather than
	// memory) and stops reading the input until sends free room. Default:
	// 12 MiB, sized to keep the peak heap of a write spread over many
	// partitions under 32 MiB (BENCHMARKS.md).
	MaxBufferedBytes int
	// IdleFlushOps: while nothing has been sent yet, once this many
	// operations wait in partial transactions the Writer sends the fullest
	// of them, so work starts early however the input spreads over
	// partitions. Only the start: afterwards transactions go out full (or
	// when the memory bound says so), since every partial one costs a
	// request more. 0 means the default, 1,000 (ten full transactions'
	// worth); a negative
	// value waits for full transactions from the start too.
	IdleFlushOps int
	// TracingProvider opens a "Writer.Write" span per Write, with the
	// operations, transactions and failed transactions it counted and its
	// outcome as attributes (see "Tracing" in package table's
	// documentation). Default: zero, no spans.
	TracingProvider tracing.Provider
}

// Defaults of WriterOptions.
const (
	// defaultMaxBufferedBytes is the default MaxBufferedBytes: 12 MiB.
	// The bound counts each operation's share of its request (body, keys
	// and 1 KiB of framing), about twice the heap an operation of a few
	// small properties holds; the Go collector lets the heap grow to twice
	// what is live (GOGC=100), and the SDK's own $batch encoding adds its
	// garbage. 12 MiB keeps the peak heap of a write spread over many
	// partitions under the 32 MiB goal where 16 MiB did not (the runs are
	// in BENCHMARKS.md). The price: smaller transactions, so more
	// requests, when input spreads over many partitions.
	defaultMaxBufferedBytes = 12 << 20
	// defaultIdleFlushOps is the default IdleFlushOps: ten full
	// transactions' worth, so that the first request leaves within the
	// first 1,000 operations whatever their spread over partitions.
	defaultIdleFlushOps = 1000
)

// Summary counts what a Write did.
type Summary struct {
	Operations   int // operations committed
	Transactions int // transactions committed
	Requests     int // transaction requests the Writer made, its resends included (the SDK's own retries of each are not seen here)
	Retries      int // resends of a transaction throttled inside its 202 answer
	Failed       int // transactions that failed for good
	Skipped      int // operations read and not sent: those after a failed transaction of their partition, and all still held when the write stopped (an *OpError or ctx done)
	Resolved     int // transactions of Adds found stored as sent after a 409 (IdempotentAdds), counted in Transactions
	Reads        int // query requests sent to check them
	// PeakBufferedBytes is the most encoded bytes the Writer held at once
	// outside transactions in flight (see WriterOptions.MaxBufferedBytes).
	PeakBufferedBytes int
}

// WriteError reports the transactions that failed for good, each with its
// operations (TransactionError.Ops); the others committed.
type WriteError struct {
	Failures []*TransactionError
}

// Error describes the first failure and counts the others.
func (e *WriteError) Error() string {
	msg := e.Failures[0].Error()
	if n := len(e.Failures) - 1; n > 0 {
		msg += " (and " + strconv.Itoa(n) + " more failed transactions)"
	}
	return msg
}

// Unwrap exposes every failed transaction's error to errors.Is and As.
func (e *WriteError) Unwrap() []error {
	out := make([]error, len(e.Failures))
	for i, f := range e.Failures {
		out[i] = f
	}
	return out
}

// Writer bulk-writes operations as entity group transactions.
type Writer struct {
	client table.Client
	opts   WriterOptions
	// wire remembers whether client has tablekit's policy, across Writes.
	wire *wirePaths
	// optErr is an option out of range, returned by Write before any
	// request.
	optErr error
}

// NewWriter returns a Writer over client.
func NewWriter(client table.Client, opts *WriterOptions) *Writer {
	w := &Writer{client: client, wire: &wirePaths{}}
	if opts != nil {
		w.opts = *opts
	}
	// Out of range is an error, not a default: Write returns it before any
	// request (NewWriter has no error return).
	switch {
	case w.opts.Parallelism < 0:
		w.optErr = fmt.Errorf("%w: WriterOptions.Parallelism %d: 1 to %d, 0 for the default", ErrBadOption, w.opts.Parallelism, maxParallelism)
	case w.opts.MaxAttempts < 0:
		w.optErr = fmt.Errorf("%w: WriterOptions.MaxAttempts %d: at least 1, 0 for the default", ErrBadOption, w.opts.MaxAttempts)
	}
	if w.opts.Parallelism == 0 {
		w.opts.Parallelism = defaultParallelism
	}
	w.opts.Parallelism = max(1, min(w.opts.Parallelism, maxParallelism))
	if w.opts.MaxAttempts == 0 {
		w.opts.MaxAttempts = 5
	}
	if w.opts.BaseDelay <= 0 {
		w.opts.BaseDelay = 100 * time.Millisecond
	}
	if w.opts.MaxDelay <= 0 {
		w.opts.MaxDelay = 5 * time.Second
	}
	if w.opts.MaxBufferedBytes <= 0 {
		w.opts.MaxBufferedBytes = defaultMaxBufferedBytes
	}
	if w.opts.IdleFlushOps == 0 {
		w.opts.IdleFlushOps = defaultIdleFlushOps
	}
	return w
}

// partitionQueue holds a partition's transactions, sent one at a time.
type partitionQueue struct {
	pk      string
	pending []*Transaction
	busy    bool
	failed  bool
}

// Write plans ops into transactions and sends them: up to Parallelism at
// once across partitions, in order within a partition, so each entity's
// operations apply in the order given ("The Writer's retries" in the package
// documentation says which failures are resent). When a transaction fails
// for good, its partition's later transactions are skipped (they may
// depend on it) and the other partitions go on; the error is a *WriteError
// listing every failed transaction. ops is read as it is written:
// operations are sent as soon as their transaction is full or ops ends. An
// operation that can never be sent stops the write before anything more is
// sent, with an *OpError.
//
// The write as a whole is not atomic: each transaction is. A transaction
// whose answer was lost may have committed; retrying it then fails (an Add
// gets 409), and the failure says so.
func (w *Writer) Write(ctx context.Context, ops iter.Seq[Op], _ *WriteOptions) (sum Summary, err error) {
	if w.optErr != nil {
		return Summary{}, w.optErr
	}
	ctx, end := trace.New(w.opts.TracingProvider).Start(ctx, opWriterWrite)
	defer func() {
		w.opts.TracingProvider.NewTracer(trace.Module, "").SpanFromContext(ctx).SetAttributes(
			trace.Attr(trace.AttrOperations, sum.Operations),
			trace.Attr(attrTransactions, sum.Transactions),
			trace.Attr(attrFailed, sum.Failed))
		end(err)
	}()
	return w.write(ctx, ops)
}

// Span attributes of Writer.Write besides trace's own.
const (
	attrTransactions = "tablekit.transactions"
	attrFailed       = "tablekit.failed"
)

func (w *Writer) write(ctx context.Context, ops iter.Seq[Op]) (Summary, error) {
	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		queues   = map[string]*partitionQueue{}
		ready    []*partitionQueue // partitions with work and nothing in flight
		inflight int
		closed   bool
		sum      Summary
		failures []*TransactionError
		queued   int  // encoded bytes of the transactions waiting for a sender
		waiting  int  // how many transactions wait for a sender
		started  bool // a transaction has gone to a sender
	)
	enqueue := func(tx *Transaction) {
		q := queues[tx.PartitionKey()]
		if q == nil {
			q = &partitionQueue{pk: tx.PartitionKey()}
			queues[q.pk] = q
		}
		if q.failed {
			sum.Skipped += tx.Len()
			return
		}
		queued += tx.Size()
		waiting++
		q.pending = append(q.pending, tx)
		if !q.busy && len(q.pending) == 1 {
			ready = append(ready, q)
			cond.Signal()
		}
	}
	var wg sync.WaitGroup
	for range w.opts.Parallelism {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			for {
				for len(ready) == 0 && !(closed && inflight == 0) {
					cond.Wait()
				}
				if len(ready) == 0 {
					cond.Broadcast()
					return
				}
				// Taken slots are cleared: a slice's array keeps what it
				// holds alive, even before the slice's start.
				q := ready[0]
				ready[0] = nil
				ready = ready[1:]
				tx := q.pending[0]
				q.pending[0] = nil
				q.pending = q.pending[1:]
				queued -= tx.Size()
				waiting--
				if !started {
					started = true
					cond.Broadcast() // the input loop waits for the first send
				}
				q.busy = true
				inflight++
				mu.Unlock()
				requests, err := w.send(ctx, tx)
				var reads int
				resolved := false
				if err != nil && w.opts.IdempotentAdds {
					resolved, reads = w.storedAsSent(ctx, tx, err)
				}
				mu.Lock()
				inflight--
				q.busy = false
				sum.Requests += requests
				sum.Retries += requests - 1
				sum.Reads += reads
				if resolved {
					sum.Resolved++
					err = nil
				}
				if err != nil {
					sum.Failed++
					q.failed = true
					for _, rest := range q.pending {
						sum.Skipped += rest.Len()
						queued -= rest.Size()
						waiting--
					}
					q.pending = nil
					failures = append(failures, err)
					if w.opts.Logger != nil {
						w.opts.Logger.WarnContext(ctx, "tablekit: transaction failed", "pk", tx.PartitionKey(), "ops", tx.Len(), "err", err)
					}
				} else {
					sum.Transactions++
					sum.Operations += tx.Len()
				}
				switch {
				case len(q.pending) > 0:
					ready = append(ready, q)
				case !q.failed:
					// Nothing queued or in flight: forget the partition, so
					// that memory does not grow with the partitions seen. A
					// failed one is kept, to skip its later operations.
					delete(queues, q.pk)
				}
				if w.opts.Progress != nil {
					w.opts.Progress(sum)
				}
				cond.Broadcast()
			}
		}()
	}

	p := newPlanner(nil)
	p.wire = w.wire
	var planErr *OpError
	budget := w.opts.MaxBufferedBytes
	i := 0
	for op := range ops {
		if ctx.Err() != nil {
			break
		}
		e, err := p.encode(op)
		if err == nil && e.quoted && !p.wire.has(w.client) {
			// Only tablekit's own $batch body sends it: refused before
			// any of its partition's requests, not at its transaction.
			err = &OpError{Kind: op.Kind, PartitionKey: e.pk, RowKey: e.rk, Err: ErrQuoteInKey}
		}
		if err != nil {
			err.Index = i
			planErr = err
			break
		}
		// The codec grows its output by appending (a 150-byte entity ends
		// in a 256-byte array); the Writer holds tens of thousands of
		// bodies, so it keeps exact-size copies when the spare capacity
		// exceeds an eighth: less heap per held operation, for a copy of
		// the body.
		if cap(e.body)-len(e.body) > len(e.body)/8 {
			e.body = bytes.Clone(e.body)
		}
		mu.Lock()
		// Memory bound: before holding e, make room. The largest partial
		// transactions go to the senders (a quarter of the bound at once, so
		// that one pass over the open partitions serves many operations),
		// and the input waits until sends have taken enough.
		if p.bytes+queued+p.cost(e) > budget {
			for _, tx := range p.closeLargest(budget/4, 1) {
				enqueue(tx)
			}
			for p.bytes+queued+p.cost(e) > budget && queued > 0 && ctx.Err() == nil {
				cond.Wait()
			}
		}
		closedTx, perr := p.place(e)
		if closedTx != nil {
			enqueue(closedTx)
		}
		// Nothing sent yet and enough input waiting in partial
		// transactions: start on the fullest rather than wait for more.
		if w.opts.IdleFlushOps > 0 && !started && waiting == 0 && p.ops >= w.opts.IdleFlushOps {
			for _, tx := range p.closeLargest(0, w.opts.Parallelism) {
				enqueue(tx)
			}
		}
		sum.PeakBufferedBytes = max(sum.PeakBufferedBytes, p.bytes+queued)
		// The first transaction goes to a sender before more input is
		// read: on a busy machine the input loop would otherwise encode
		// thousands more operations before a sender gets a CPU.
		for !started && waiting > 0 && ctx.Err() == nil {
			cond.Wait()
		}
		// Back-pressure on a long queue of full transactions.
		for waiting > 4*w.opts.Parallelism && ctx.Err() == nil {
			cond.Wait()
		}
		mu.Unlock()
		if perr != nil {
			perr.Index = i
			planErr = perr
			break
		}
		i++
	}
	mu.Lock()
	if planErr == nil && ctx.Err() == nil {
		for _, tx := range p.flushOpen() {
			enqueue(tx)
		}
	}
	if planErr != nil || ctx.Err() != nil {
		// Nothing more is sent: the partial transactions stay unsent and
		// the full ones waiting for a sender are dropped.
		sum.Skipped += p.ops
		for _, q := range queues {
			for _, rest := range q.pending {
				sum.Skipped += rest.Len()
			}
			q.pending = nil
		}
		ready = nil
	}
	closed = true
	cond.Broadcast()
	mu.Unlock()
	wg.Wait()

	switch {
	case planErr != nil:
		return sum, planErr
	case ctx.Err() != nil:
		return sum, ctx.Err()
	case len(failures) > 0:
		return sum, &WriteError{Failures: failures}
	}
	return sum, nil
}

// send submits tx, resending it only when the service reported its failed
// operation as throttled inside a 202 (see throttledInside); it returns the
// requests it made.
func (w *Writer) send(ctx context.Context, tx *Transaction) (int, *TransactionError) {
	delay := w.opts.BaseDelay
	for attempt := 1; ; attempt++ {
		_, err := tx.Submit(ctx, w.client, nil)
		if err == nil {
			return attempt, nil
		}
		var te *TransactionError
		if !errors.As(err, &te) {
			te = &TransactionError{Index: -1, Ops: tx.Ops(), Err: err}
		}
		if attempt >= w.opts.MaxAttempts || !te.throttledInside() || ctx.Err() != nil {
			return attempt, te
		}
		wait := delay/2 + rand.N(delay/2+1)
		if w.opts.Logger != nil {
			w.opts.Logger.DebugContext(ctx, "tablekit: transaction throttled; resending", "pk", tx.PartitionKey(), "attempt", attempt, "wait", wait, "err", err)
		}
		select {
		case <-ctx.Done():
			return attempt, te
		case <-time.After(wait):
		}
		delay = min(2*delay, w.opts.MaxDelay)
	}
}

// storedAsSent checks a transaction of Adds that failed with
// EntityAlreadyExists: true if every entity is stored as sent. It returns
// the query requests it sent.
func (w *Writer) storedAsSent(ctx context.Context, tx *Transaction, te *TransactionError) (bool, int) {
	if te.ErrorCode != string(aztables.EntityAlreadyExists) {
		return false, 0
	}
	actions := tx.Actions()
	sent := make(map[string][]byte, len(actions))
	lo, hi := "", ""
	for i, op := range tx.Ops() {
		if op.Kind != KindAdd {
			return false, 0
		}
		rk := op.RowKey()
		sent[rk] = actions[i].Entity
		if i == 0 || rk < lo {
			lo = rk
		}
		if rk > hi {
			hi = rk
		}
	}
	f, err := table.Partition(tx.PartitionKey()).And(table.Prop("RowKey").Ge(lo), table.Prop("RowKey").Le(hi)).Build()
	if err != nil {
		return false, 0
	}
	reads, same := 0, 0
	pager := w.client.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &f})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		reads++
		if err != nil {
			return false, reads
		}
		for _, raw := range page.Entities {
			var keys struct{ RowKey string }
			if json.Unmarshal(raw, &keys) != nil {
				return false, reads
			}
			if body, ok := sent[keys.RowKey]; ok {
				if !sameprops.Equal(body, raw) {
					return false, reads
				}
				same++
			}
		}
		if same == len(sent) {
			break // the range may hold other entities; no need to read them
		}
	}
	return same == len(sent), reads
}
