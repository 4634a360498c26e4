package consistency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/envelope"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/internal/trace"
)

// Message is a dequeued message handed to a handler.
type Message struct {
	// Type names the handler, with a version: "archive.v1".
	Type string
	// Key identifies the work, so handlers can be idempotent and logs can
	// follow it: the same key may be delivered more than once.
	Key string
	// Enqueued is when the message was first sent.
	Enqueued time.Time
	// Payload is the message's data as JSON (read with Decode); a payload
	// the Sender kept in a blob is read into it before the handler runs.
	Payload json.RawMessage
	// LastError is the error of the previous attempt, if it failed.
	LastError string
	// ID is the queue's id of the message.
	ID string
	// DequeueCount is how many times the message has been delivered,
	// this delivery included.
	DequeueCount int64

	// blob names the blob that keeps the payload, when the Sender put it
	// in one.
	blob *envelope.BlobRef
}

// newMessage is the message a handler sees for env, dequeued as id.
func newMessage(env *envelope.Envelope, id string, dequeues int64) *Message {
	return &Message{Type: env.Type, Key: env.Key, Enqueued: env.Enqueued, Payload: env.Payload,
		LastError: env.LastError, ID: id, DequeueCount: dequeues, blob: env.PayloadBlob}
}

// envelope is m as the queue carries it.
func (m *Message) envelope() envelope.Envelope {
	return envelope.Envelope{Type: m.Type, Key: m.Key, Enqueued: m.Enqueued, Payload: m.Payload,
		PayloadBlob: m.blob, LastError: m.LastError}
}

// Decode unmarshals the payload into v.
func (m *Message) Decode(v any) error {
	if err := json.Unmarshal(m.Payload, v); err != nil {
		return Permanent(fmt.Errorf("%w: payload of %s: %v", ErrMalformed, m.Type, err))
	}
	return nil
}

// Handler does the work of one message. It must converge to the current
// state of its source (read the source, make the target match) so that a
// redelivered, duplicated or reordered message does no harm. Returning nil
// deletes the message; an error lets it reappear after a back-off; an error
// wrapped by Permanent sends it to the poison queue at once.
//
// A Handler takes no options parameter: the user writes it and the worker
// is its only caller, so the message is its whole input. Methods that are
// Handlers (Mover.Handle, the patterns' Handle methods) share this shape.
type Handler func(ctx context.Context, m *Message) error

type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks an error that retrying cannot fix (a malformed payload):
// the message goes to the poison queue instead of coming back.
func Permanent(err error) error { return permanent{err} }

// Defaults of the Worker.
const (
	// defaultMaxDequeues: a message that has failed this many deliveries
	// goes to the poison queue on the next one.
	defaultMaxDequeues = 5
	// defaultVisibility is how long a dequeued message stays hidden; while
	// the worker holds it (waiting for a handler slot or running) it renews
	// it a third of that after the dequeue, then a third of it after each
	// renewal's answer.
	defaultVisibility = 30 * time.Second
)

// WorkerOptions configure a Worker. nil means the defaults.
type WorkerOptions struct {
	// BatchSize is the most messages one dequeue asks for and one
	// BatchHandler call is given, 1 to 32.
	// Default (0): 32. Out of range, Run and Drain fail with ErrBadOption.
	BatchSize int
	// Concurrency bounds the messages handled at once: a message of a
	// Handle type counts one, a BatchHandler's call counts its messages,
	// at most Concurrency (a batch larger than Concurrency runs alone, so
	// at the defaults one batch of 32 runs at a time). The worker holds
	// up to twice as many while handlers take under a third of
	// Visibility, and only as many otherwise (see Worker). Default (0):
	// 16; negative: ErrBadOption.
	Concurrency int
	// Visibility hides a dequeued message, in whole seconds (at least 1 s).
	// Default (0): 30 s; while the worker holds a message (waiting for a
	// handler slot or running) it renews it a third of that after the
	// dequeue, then a third of it after each renewal's answer, one renewal
	// at a time. Make it at least four times the slowest Update Message
	// round trip (see "Visibility and latency" in the package
	// documentation). Below 1 s or negative, Run and Drain fail with
	// ErrBadOption.
	Visibility time.Duration
	// MaxDequeues: a message dequeued more often goes to the poison queue
	// with its last error. Default (0): 5; negative: ErrBadOption.
	MaxDequeues int64
	// Backoff is how long a failed message stays hidden, by its dequeue
	// count. Default: 2 s doubling per delivery, at most 10 minutes.
	Backoff func(dequeueCount int64) time.Duration
	// PollInterval is the first wait after an empty dequeue; it doubles up
	// to MaxPollInterval while the queue stays empty. Defaults: 100 ms, 5 s.
	PollInterval, MaxPollInterval time.Duration
	// ShutdownGrace is how long Run lets running handlers finish after its
	// context ends; then it cancels them and their messages reappear.
	// Default: 10 s.
	ShutdownGrace time.Duration
	// Blobs reads payloads that senders put in blobs (blobstore.New(client)
	// for an *azblob.Client). Default: none, and a message whose payload is
	// in a blob goes to the poison queue.
	Blobs BlobStore
	// Logger records failures at Warn (retried and poisoned messages, with
	// a panic's stack; lost claims and failed renewals, with the message
	// ID; once, renewals slow for the visibility) and processed messages at
	// Debug. Default:
	// slog.Default() at the time NewWorker is called.
	Logger *slog.Logger
	// OnProcessed, OnRetried and OnPoisoned are called after each outcome;
	// a panic in one is logged at Error and goes no further. Default: none.
	OnProcessed func(*Message)
	OnRetried   func(*Message, error)
	OnPoisoned  func(m *Message, raw string, err error)
	// TracingProvider opens a "Worker.handle" span per dequeued message,
	// with the queue's name (when the Queue has a URL method, as
	// *azqueue.QueueClient does), the message type and what became of it
	// (tablekit.disposition: processed, retried, poisoned, abandoned or
	// lost) as
	// attributes, and an error status unless it was processed; the
	// handler's requests are its children (see "Tracing" in package
	// table's documentation). Default: zero, no spans.
	TracingProvider tracing.Provider
}

// Stats counts what a consumer of a queue did: a Worker (Stats, Drain),
// HandleBatches, or a Mover's MoveBatches and RunBatches. A count that a
// consumer does not keep stays 0.
type Stats struct {
	// Dequeued messages, and of those: Processed (the work done and the
	// message deleted), Retried (left to reappear after their back-off or
	// visibility timeout) and Poisoned (moved to the poison queue:
	// malformed, too many deliveries, refused as permanent, or, in the
	// batch loops, of another type or with a payload in a blob). Renewed
	// counts a Worker's visibility renewals.
	Dequeued, Processed, Retried, Poisoned, Renewed int64
	// ClaimsLost counts the messages a Worker lost its claim on: the queue
	// refused the message's pop receipt to a renewal, the delete after its
	// handler succeeded or the update that retries it, because another
	// consumer dequeued it once its visibility lapsed (or it is gone). The
	// handler's context was cancelled with ErrClaimLost, the loss was
	// logged at Warn with the message ID, and the message may be handled
	// again. A message counted here is not counted Processed.
	ClaimsLost int64
	// SlowestRenewal is the longest round trip of a Worker's visibility
	// renewals: keep WorkerOptions.Visibility at four times it or more.
	SlowestRenewal time.Duration
	// Gone counts, of Processed, the moves MoveBatches and RunBatches found
	// nothing left to do for (already moved, or never there); the others
	// were moved.
	Gone int64
	// Batches is how many of the batch loops' dequeues returned messages.
	Batches int64
	// Abandoned counts messages whose handler shutdown cancelled after
	// ShutdownGrace: they reappear after their visibility timeout.
	Abandoned int64
	// Panicked counts handler runs that panicked.
	Panicked int64
	// Failures counts retried and poisoned messages by type, with each
	// type's last error.
	Failures map[string]TypeFailures
}

// Worker runs handlers for the messages of a queue: the guide's worker role
// ("Eventually consistent transactions pattern") as a library. Run several
// workers, in one process or many, on the same queue: the queue hands each
// message to one of them at a time.
//
// A Worker handles at most Concurrency messages at once: a message of a
// Handle type takes one handler slot, a batch of a HandleBatch type one a
// message, at most all of them. It holds messages for up to twice
// Concurrency slots while handlers take under a third of Visibility on
// average (a message that waits for a slot seldom needs a renewal) and
// only Concurrency otherwise, and dequeues only while it may hold more:
// up to the free slots' worth of messages, or BatchSize once a full batch
// has room while a BatchHandler is registered. A
// batch gathers its type's messages over consecutive dequeues (see
// HandleBatch), so a queue that mixes types still gives full batches. Every
// held message is renewed from its dequeue while it waits or runs, so none
// waits out its visibility for a slot.
type Worker struct {
	queue    Queue
	poison   Queue
	opts     WorkerOptions
	hmu      sync.RWMutex // guards handlers and batchers
	handlers map[string]Handler
	batchers map[string]BatchHandler
	mu       sync.Mutex // guards stats
	stats    Stats
	log      *slog.Logger
	// iterations counts rounds of the dequeue loop, so tests can tell
	// waiting from polling.
	iterations atomic.Int64
	// meanRun is a running mean of handler run times, in nanoseconds.
	meanRun atomic.Int64
	// warnedSlow is set once the worker has warned that renewals are slow
	// for the visibility.
	warnedSlow atomic.Bool
	// optErr is an option out of range, returned by Run and Drain.
	optErr error
	// tracer opens Worker.handle spans; queueName is their queue attribute.
	tracer    trace.Tracer
	queueName string
}

// NewWorker returns a worker for queue that moves messages it cannot
// process to poison.
func NewWorker(queue, poison Queue, opts *WorkerOptions) *Worker {
	w := &Worker{queue: queue, poison: poison, handlers: map[string]Handler{}, batchers: map[string]BatchHandler{}}
	if opts != nil {
		w.opts = *opts
	}
	o := &w.opts
	// Out of range is an error, not a default: Run and Drain return it
	// before any request (NewWorker has no error return).
	switch {
	case o.BatchSize < 0 || o.BatchSize > maxDequeueBatch:
		w.optErr = fmt.Errorf("%w: WorkerOptions.BatchSize %d: 1 to %d (\"Get Messages\": numofmessages), 0 for the default", ErrBadOption, o.BatchSize, maxDequeueBatch)
	case o.Concurrency < 0:
		w.optErr = fmt.Errorf("%w: WorkerOptions.Concurrency %d: at least 1, 0 for the default", ErrBadOption, o.Concurrency)
	case o.Visibility < 0 || (o.Visibility > 0 && o.Visibility < time.Second):
		w.optErr = fmt.Errorf("%w: WorkerOptions.Visibility %v: at least 1 s (the service counts whole seconds), 0 for the default", ErrBadOption, o.Visibility)
	case o.MaxDequeues < 0:
		w.optErr = fmt.Errorf("%w: WorkerOptions.MaxDequeues %d: at least 1, 0 for the default", ErrBadOption, o.MaxDequeues)
	}
	if o.BatchSize == 0 {
		o.BatchSize = maxDequeueBatch
	}
	if o.Concurrency == 0 {
		o.Concurrency = 16
	}
	if o.Visibility == 0 {
		o.Visibility = defaultVisibility
	}
	if o.MaxDequeues == 0 {
		o.MaxDequeues = defaultMaxDequeues
	}
	if o.Backoff == nil {
		o.Backoff = func(n int64) time.Duration {
			return min(2*time.Second<<min(n-1, 10), 10*time.Minute)
		}
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 100 * time.Millisecond
	}
	if o.MaxPollInterval <= 0 {
		o.MaxPollInterval = 5 * time.Second
	}
	if o.ShutdownGrace <= 0 {
		o.ShutdownGrace = 10 * time.Second
	}
	w.log = o.Logger
	if w.log == nil {
		w.log = slog.Default()
	}
	// Every record the worker writes passes through the redacting
	// handler: a log site cannot leak a SAS signature by forgetting.
	w.log = redact.Logger(w.log)
	w.tracer = trace.New(o.TracingProvider)
	w.queueName = queueName(queue)
	return w
}

// queueName is the last path segment of queue's URL, when it has one.
func queueName(q Queue) string {
	u, ok := q.(interface{ URL() string })
	if !ok {
		return ""
	}
	s := strings.TrimRight(u.URL(), "/")
	if i := strings.IndexByte(s, '?'); i >= 0 {
		s = s[:i]
	}
	return s[strings.LastIndexByte(s, '/')+1:]
}

// Handle registers h for messages of msgType ("archive.v1"): each message
// of the type is handed to h on its own. A type has one handler, per
// message or batched: a second registration returns ErrDuplicateHandler
// and changes nothing, so give each index (or other handler instance) a
// type of its own. Safe to call while the worker runs.
func (w *Worker) Handle(msgType string, h Handler) error {
	if h == nil {
		return w.register(msgType, nil)
	}
	return w.register(msgType, func() { w.handlers[msgType] = h })
}

// HandleBatch registers h for messages of msgType: the type's messages are
// handed to h together, up to BatchSize a call, so that their table work can
// share reads and transactions. A batch takes the type's messages of the
// dequeue that opens it and of up to three dequeues after it, and goes to
// h once it holds BatchSize, once a dequeue returns fewer messages than it
// asked for (the queue has no more for now), or once the worker may hold
// no more; then it waits for its handler slots (one a message, at most
// Concurrency). Each message is held,
// renewed, deleted, retried or poisoned as a Handle handler's is. The rules
// of Handle about one handler per type apply.
func (w *Worker) HandleBatch(msgType string, h BatchHandler) error {
	if h == nil {
		return w.register(msgType, nil)
	}
	return w.register(msgType, func() { w.batchers[msgType] = h })
}

// register checks msgType and, unless set is nil (a nil handler) or the
// type already has a handler, calls set under the lock.
func (w *Worker) register(msgType string, set func()) error {
	if err := checkType(msgType); err != nil {
		return err
	}
	if set == nil {
		return fmt.Errorf("%w for %s", ErrNilHandler, msgType)
	}
	w.hmu.Lock()
	defer w.hmu.Unlock()
	_, single := w.handlers[msgType]
	_, batched := w.batchers[msgType]
	if single || batched {
		return fmt.Errorf("%w: %q", ErrDuplicateHandler, msgType)
	}
	set()
	return nil
}

func (w *Worker) handler(msgType string) Handler {
	w.hmu.RLock()
	defer w.hmu.RUnlock()
	return w.handlers[msgType]
}

// batcher returns the BatchHandler of msgType, or nil.
func (w *Worker) batcher(msgType string) BatchHandler {
	w.hmu.RLock()
	defer w.hmu.RUnlock()
	return w.batchers[msgType]
}

// batching reports whether any BatchHandler is registered.
func (w *Worker) batching() bool {
	w.hmu.RLock()
	defer w.hmu.RUnlock()
	return len(w.batchers) > 0
}

// Stats returns the counts so far.
func (w *Worker) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	s.Failures = copyFailures(s.Failures)
	return s
}

// fail records a failed delivery in the call's tally and in Stats.
func (w *Worker) fail(t *tally, kind int, msgType string, err error) {
	// The last error of a type reaches the caller in the FailureReport:
	// redacted here, once, for the report and for Stats.
	err = redact.Error(err)
	t.add(kind, msgType, err)
	w.count(func(s *Stats) {
		var retried, poisoned int64
		addFailure(&retried, &poisoned, &s.Panicked, &s.Failures, kind, msgType, err)
		s.Retried += retried
		s.Poisoned += poisoned
	})
}

func (w *Worker) count(f func(*Stats)) {
	w.mu.Lock()
	f(&w.stats)
	w.mu.Unlock()
}

// Run processes messages until ctx ends, then lets running handlers finish
// for ShutdownGrace before cancelling them (their messages simply reappear).
// It returns a *FailureReport of the messages that failed while it ran
// (each failure was also logged at Warn as it happened), joined with the
// last dequeue error if dequeues were still failing; nil when nothing
// failed.
func (w *Worker) Run(ctx context.Context, o *WriteOptions) error {
	if w.optErr != nil {
		return w.optErr
	}
	_, err, failed := w.loop(ctx, false)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	return join(err, failed)
}

// Drain processes messages until a dequeue finds none visible, then
// returns, having waited for every handler it started. Its error is a
// *FailureReport of the messages that failed during the call (the report
// itself when nothing else went wrong, so a loop that expects some
// failures can test err.(*FailureReport)), joined with a dequeue error
// that ended it; nil when everything succeeded.
func (w *Worker) Drain(ctx context.Context, o *WriteOptions) (Stats, error) {
	if w.optErr != nil {
		return Stats{}, w.optErr
	}
	st, err, failed := w.loop(ctx, true)
	return st, join(err, failed)
}

func (w *Worker) loop(ctx context.Context, drain bool) (Stats, error, error) {
	failed := &tally{}
	handlerCtx, cancelHandlers := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHandlers()
	var wg sync.WaitGroup
	// held counts the slots (see slots) that the handler calls the worker
	// holds messages for will take, until they return: a message of a
	// Handle type, running or waiting, takes one; a batch of a HandleBatch
	// type handed to its handler takes its messages, at most Concurrency.
	// A batch still gathering messages (open) counts for nothing: it is
	// bounded by BatchSize and goes to its handler within maxBatchDequeues
	// dequeues.
	var held atomic.Int64
	// active counts the goroutines of messages and batches not yet
	// settled: a batch stops counting as held once its handler returned,
	// but a failure among its messages may still make one visible.
	var active atomic.Int64
	slots := newSlots(w.opts.Concurrency)
	// freed wakes the loop when a handler finishes. One buffered signal is
	// enough: a finish between the loop's count and its wait stays in the
	// buffer, and extra signals only cost a recount.
	freed := make(chan struct{}, 1)
	release := func(n int64) {
		held.Add(-n)
		select {
		case freed <- struct{}{}:
		default:
		}
	}
	wait := func() {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(w.opts.ShutdownGrace):
			cancelHandlers()
			<-done
		}
	}
	// How many messages to hold, counted as the slots they take (a
	// message of a Handle type takes one, a batch its messages, at most
	// Concurrency). A held message's visibility is renewed from its
	// dequeue whether it runs or waits for a slot, so waiting never lets it
	// expire. While handlers are quick (their mean under a third of the
	// visibility, so a waiting message seldom needs a renewal), the worker
	// holds up to twice Concurrency and refills once the waiting ones have
	// all started: dequeues stay large. While they are slow it holds only
	// as many as it has slots and refills once half are free: nothing
	// waits, so nothing costs renewals, and other workers on the queue get
	// the messages this one could not start. With a BatchHandler
	// registered, it refills once a full batch has room, and a dequeue
	// asks for BatchSize, so batches stay full.
	sizing := func() (limit, refill int64) {
		c, b := int64(w.opts.Concurrency), int64(w.opts.BatchSize)
		if time.Duration(w.meanRun.Load()) < w.opts.Visibility/3 {
			limit, refill = 2*c, min(c, b)
		} else {
			limit, refill = c, max(1, min(c, b)/2)
		}
		if w.batching() {
			refill = min(c, b)
		}
		return limit, refill
	}
	// open is, by batched type, the batch that the type's messages of the
	// next dequeue join (see openBatch): it counts as a held call.
	open := map[string]*openBatch{}
	var openTypes []string
	start := func(b *openBatch) {
		n := slots.weight(len(b.items))
		held.Add(int64(n))
		wg.Add(1)
		active.Add(1)
		go func() {
			defer wg.Done()
			defer active.Add(-1)
			var once sync.Once
			done := func() { once.Do(func() { release(int64(n)) }) }
			defer done()
			w.processBatch(handlerCtx, b.msgType, b.items, failed, slots, done)
		}()
	}
	// flush hands the open batches to their handlers: all of them when
	// all is set, else the full ones and those open through
	// maxBatchDequeues dequeues.
	flush := func(all bool) {
		kept := openTypes[:0]
		for _, t := range openTypes {
			b := open[t]
			if all || len(b.items) >= w.opts.BatchSize || b.dequeues >= maxBatchDequeues {
				delete(open, t)
				start(b)
				continue
			}
			kept = append(kept, t)
		}
		openTypes = kept
	}
	poll := w.opts.PollInterval
	var loopErr error
	for ctx.Err() == nil {
		w.iterations.Add(1)
		limit, refill := sizing()
		free := limit - held.Load()
		if free < refill {
			if len(openTypes) > 0 {
				// No dequeue before a call returns: the open batches get
				// no more messages.
				flush(true)
				continue
			}
			select {
			case <-ctx.Done():
			case <-freed:
			}
			continue
		}
		n := int32(min(free, int64(w.opts.BatchSize)))
		if w.batching() {
			n = int32(w.opts.BatchSize)
		}
		// Whether handlers ran during the dequeue: one that failed meanwhile
		// made its message visible after the queue answered.
		busy := active.Load() > 0
		// The queue hid the messages at some moment between sending the
		// dequeue and its answer: their first renewal counts from the
		// send, the earliest it can have been, so a slow answer does not
		// eat the renewal's margin.
		sent := time.Now()
		resp, err := w.queue.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{
			NumberOfMessages:  to.Ptr(n),
			VisibilityTimeout: to.Ptr(int32(w.opts.Visibility / time.Second)),
		})
		if err != nil || len(resp.Messages) < int(n) {
			// The queue has no more for now (or no answer): the open
			// batches wait for nothing.
			flush(true)
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			// The dequeue error leaves through Run and Drain, and its
			// request URL holds the SAS signature: redact it.
			loopErr = redact.Error(err)
			w.log.WarnContext(ctx, "tablekit: dequeue failed", "err", loopErr)
			if drain {
				break
			}
			sleep(ctx, poll)
			poll = min(2*poll, w.opts.MaxPollInterval)
			continue
		}
		loopErr = nil
		if len(resp.Messages) == 0 {
			if drain {
				if busy || active.Load() > 0 {
					// Handlers running during the dequeue or still running may
					// have failed and made their messages visible again: wait
					// for them, then look once more.
					wg.Wait()
					continue
				}
				break
			}
			sleep(ctx, poll)
			poll = min(2*poll, w.opts.MaxPollInterval)
			continue
		}
		poll = w.opts.PollInterval
		w.count(func(s *Stats) { s.Dequeued += int64(len(resp.Messages)) })
		for _, b := range open {
			b.dequeues++
		}
		for _, dm := range resp.Messages {
			env, derr := decodeEnvelope(deref(dm.MessageText))
			if derr == nil && derefInt(dm.DequeueCount) <= w.opts.MaxDequeues && w.batcher(env.Type) != nil {
				b := open[env.Type]
				if b != nil && len(b.items) >= w.opts.BatchSize {
					// Full: it goes, and a new one opens.
					delete(open, env.Type)
					start(b)
					b = nil
				}
				if b == nil {
					b = &openBatch{msgType: env.Type}
					open[env.Type] = b
					if !slices.Contains(openTypes, env.Type) {
						openTypes = append(openTypes, env.Type)
					}
				}
				b.items = append(b.items, w.hold(handlerCtx, dm, env, sent))
				continue
			}
			held.Add(1)
			wg.Add(1)
			active.Add(1)
			go func() {
				defer wg.Done()
				defer active.Add(-1)
				defer release(1)
				w.process(handlerCtx, dm, env, derr, sent, failed, slots)
			}()
		}
		flush(len(resp.Messages) < int(n))
	}
	// Shut down or drained: what is open goes to its handlers, as a
	// held message waiting for a slot does.
	flush(true)
	wait()
	if loopErr == nil && !drain {
		loopErr = ctx.Err()
	}
	return w.Stats(), loopErr, failed.report()
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
func derefInt(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// process handles one held message: it renews the message's visibility
// from its dequeue, waits for a handler slot, runs the handler, and deletes,
// retries or poisons the message, or reports that its claim was lost.
func (w *Worker) process(ctx context.Context, dm *azqueue.DequeuedMessage, env *envelope.Envelope, derr error, dequeued time.Time, failed *tally, slots *slots) {
	ctx, end := w.tracer.Start(ctx, "Worker.handle", trace.Attr(trace.AttrQueue, w.queueName))
	msgType, disposition, err := w.handle(ctx, dm, env, derr, dequeued, failed, slots)
	w.opts.TracingProvider.NewTracer(trace.Module, "").SpanFromContext(ctx).SetAttributes(
		trace.Attr(trace.AttrMessage, msgType), trace.Attr(attrDisposition, disposition))
	end(err)
}

// attrDisposition is the span attribute of what became of a message:
// processed, retried, poisoned, abandoned or lost.
const attrDisposition = "tablekit.disposition"

// handle is process without its span: given the message's envelope or
// why it has none, it returns the message's type, what became of it, and
// the error that made it fail. A message of a HandleBatch type comes here
// only to be poisoned, past MaxDequeues.
func (w *Worker) handle(ctx context.Context, dm *azqueue.DequeuedMessage, env *envelope.Envelope, derr error, dequeued time.Time, failed *tally, slots *slots) (string, string, error) {
	c := w.newClaim(ctx, dm)
	defer c.end()
	if derr != nil {
		w.toPoison(ctx, failed, &Message{ID: c.id, DequeueCount: derefInt(dm.DequeueCount)}, c, derr)
		return "", "poisoned", derr
	}
	msg := newMessage(env, c.id, derefInt(dm.DequeueCount))
	h := w.handler(env.Type)
	if bh := w.batcher(env.Type); h == nil && bh != nil {
		// Registered after the dequeue sorted the message: a batch of one.
		h = func(ctx context.Context, m *Message) error {
			if errs := bh(ctx, []*Message{m}); len(errs) > 0 {
				return errs[0]
			}
			return errNoOutcome
		}
	}
	switch {
	case h == nil:
		err := fmt.Errorf("consistency: no handler for message type %q", env.Type)
		w.toPoison(ctx, failed, msg, c, err)
		return env.Type, "poisoned", err
	case msg.DequeueCount > w.opts.MaxDequeues:
		err := fmt.Errorf("consistency: gave up after %d deliveries; last error: %s", msg.DequeueCount-1, env.LastError)
		w.toPoison(ctx, failed, msg, c, err)
		return env.Type, "poisoned", err
	}
	c.renew(ctx, dequeued)
	if !slots.acquire(c.ctx, 1) {
		if lost := c.lostErr(); lost != nil {
			// Lost while waiting for a slot: another consumer may have it.
			return env.Type, "lost", lost
		}
		// Shut down while waiting for a slot: it reappears.
		w.count(func(s *Stats) { s.Abandoned++ })
		return env.Type, "abandoned", ctx.Err()
	}
	start := time.Now()
	err := w.run(c.ctx, h, msg)
	slots.release(1)
	w.observe(time.Since(start))
	disposition := w.outcome(ctx, failed, msg, c, err)
	if disposition == "lost" {
		err = errors.Join(c.lostErr(), err)
	}
	return env.Type, disposition, err
}

// outcome settles a held message after its handler returned err: it
// deletes a processed message, poisons a permanent failure, retries any
// other, or reports that the claim was lost or the handler abandoned by
// shutdown. It returns what became of the message.
func (w *Worker) outcome(ctx context.Context, failed *tally, msg *Message, c *claim, err error) string {
	var perm permanent
	switch {
	case c.lostErr() != nil:
		// Lost while the handler ran (its context said so): the queue
		// would refuse the receipt to a delete or a retry.
		return "lost"
	case err == nil:
		derr := c.settle(ctx, func(receipt string) error {
			_, err := w.queue.DeleteMessage(ctx, c.id, receipt, nil)
			return err
		})
		if c.lostErr() != nil {
			// Refused for its receipt: another consumer has the message
			// and runs its handler again.
			return "lost"
		}
		if derr != nil {
			// The message will reappear and its handler run again: harmless,
			// since handlers converge.
			w.log.WarnContext(ctx, "tablekit: delete of a processed message failed", "id", c.id, "err", redact.Error(derr))
		}
		if msg.blob != nil && w.opts.Blobs != nil {
			_ = w.opts.Blobs.Delete(ctx, msg.blob.Container, msg.blob.Name)
		}
		w.count(func(s *Stats) { s.Processed++ })
		w.log.DebugContext(ctx, "tablekit: processed", "type", msg.Type, "key", msg.Key, "id", c.id)
		if w.opts.OnProcessed != nil {
			w.notify(ctx, "OnProcessed", func() { w.opts.OnProcessed(msg) })
		}
		return "processed"
	case errors.As(err, &perm):
		w.toPoison(ctx, failed, msg, c, err)
		return "poisoned"
	case ctx.Err() != nil && !isPanic(err):
		// Shutdown cancelled the handler past ShutdownGrace: not the
		// message's failure; it reappears after its visibility timeout.
		w.count(func(s *Stats) { s.Abandoned++ })
		return "abandoned"
	default:
		w.retry(ctx, failed, msg, c, err)
		return "retried"
	}
}

// run reads a payload kept in a blob, then calls the handler.
func (w *Worker) run(ctx context.Context, h Handler, msg *Message) error {
	if err := w.payload(ctx, msg); err != nil {
		return err
	}
	return w.call(ctx, h, msg)
}

// payload reads into msg a payload its sender kept in a blob.
func (w *Worker) payload(ctx context.Context, msg *Message) error {
	if msg.blob == nil {
		return nil
	}
	if w.opts.Blobs == nil {
		return Permanent(fmt.Errorf("consistency: payload in blob %s/%s and no Blobs configured", msg.blob.Container, msg.blob.Name))
	}
	raw, err := w.opts.Blobs.Get(ctx, msg.blob.Container, msg.blob.Name)
	if err != nil {
		return fmt.Errorf("consistency: payload blob: %w", err)
	}
	msg.Payload = raw
	return nil
}

// observe folds a handler's run time into the running mean that decides
// how many messages the worker holds (an approximate mean: concurrent
// updates may drop one, which only delays the estimate).
func (w *Worker) observe(d time.Duration) {
	old := w.meanRun.Load()
	w.meanRun.Store(old + (int64(d)-old)/8)
}

// PanicError is a handler's panic, recovered and treated as its message's
// failure: the message reappears after its back-off like any other failure
// and goes to the poison queue after MaxDequeues, while the worker keeps
// serving the other messages. A panic can be a bug that every delivery hits
// or a transient one (a race), so it is retried rather than poisoned at once.
type PanicError struct {
	// Type and Key name the message whose handler panicked.
	Type, Key string
	// Value is what the handler panicked with.
	Value any
	// Stack is the handler goroutine's stack at the panic.
	Stack []byte
}

// Error reports the panic value and where it was raised (the function and
// line at the top of Stack), on one line. The whole stack stays in Stack,
// and the worker adds it below this line in the message's LastError and
// the poison record.
func (e *PanicError) Error() string {
	msg := fmt.Sprintf("consistency: handler of %s (key %q) panicked: %s", e.Type, e.Key, redact.Line(fmt.Errorf("%v", e.Value)))
	if site := panicSite(e.Stack); site != "" {
		msg += " at " + site
	}
	return msg
}

// panicSite is the frame that panicked in a stack taken by a deferred
// recover (debug.Stack): the function and file:line after runtime's panic
// frame, or "" when the stack has none.
func panicSite(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "panic(") && i+3 < len(lines) {
			fn, at := strings.TrimSpace(lines[i+2]), strings.TrimSpace(lines[i+3])
			if j := strings.LastIndex(at, " +0x"); j > 0 {
				at = at[:j]
			}
			if j := strings.LastIndex(fn, "("); j > 0 {
				fn = fn[:j]
			}
			return fn + " (" + at + ")"
		}
	}
	return ""
}

// Unwrap returns the panic value when it is an error (panic(err)).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// call runs h, turning a panic into a *PanicError: one bad message must not
// take the process, and every healthy message in it, down.
func (w *Worker) call(ctx context.Context, h Handler, msg *Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Type: msg.Type, Key: msg.Key, Value: r, Stack: debug.Stack()}
		}
	}()
	return h(ctx, msg)
}

// retry hides a failed message for the back-off of its dequeue count and
// records the error in it for the next attempt and the poison queue.
func (w *Worker) retry(ctx context.Context, failed *tally, msg *Message, c *claim, herr error) {
	// Redacted once, here: the report, the log, OnRetried and the
	// message's LastError all get this one.
	herr = redact.Error(herr)
	w.fail(failed, failRetried, msg.Type, herr)
	w.log.WarnContext(ctx, "tablekit: handler failed; message will reappear", "type", msg.Type, "key", msg.Key, "id", c.id, "dequeues", msg.DequeueCount, "err", herr)
	if w.opts.OnRetried != nil {
		w.notify(ctx, "OnRetried", func() { w.opts.OnRetried(msg, herr) })
	}
	if ctx.Err() != nil {
		return // shutting down: the message reappears after its visibility timeout
	}
	env := msg.envelope()
	if env.PayloadBlob != nil {
		env.Payload = nil
	}
	env.LastError = truncate(failureText(herr), 4096)
	text, err := encode(&env)
	if err != nil {
		text, _ = encode(&envelope.Envelope{Type: env.Type, Key: env.Key, Enqueued: env.Enqueued, Payload: env.Payload, PayloadBlob: env.PayloadBlob})
	}
	secs := int32(w.opts.Backoff(msg.DequeueCount) / time.Second)
	_ = c.settle(ctx, func(receipt string) error {
		_, err := w.queue.UpdateMessage(ctx, c.id, receipt, text, &azqueue.UpdateMessageOptions{VisibilityTimeout: to.Ptr(secs)})
		return err
	})
}

// toPoison copies the message to the poison queue, then deletes it. A crash
// between the two leaves the message to be poisoned again on redelivery:
// the poison queue may then hold it twice (same MessageID).
func (w *Worker) toPoison(ctx context.Context, failed *tally, msg *Message, c *claim, cause error) {
	text := c.text
	// Redacted once, here: the poison record, the report, the log and
	// OnPoisoned all get this one.
	cause = redact.Error(cause)
	rec := envelope.PoisonRecord{MessageID: c.id, DequeueCount: msg.DequeueCount, Error: truncate(failureText(cause), 4096), PoisonedAt: time.Now().UTC()}
	if msg.Type != "" {
		env := msg.envelope()
		rec.Envelope = &env
	} else {
		rec.Raw = text
	}
	b, _ := json.Marshal(rec)
	for xmlLen(string(b)) > maxMessageBytes {
		// Keep what fits: the error first, then as much of the message as we can.
		rec.Raw, rec.Envelope = truncate(text, len(text)/2), nil
		text = rec.Raw
		b, _ = json.Marshal(rec)
	}
	if _, err := w.poison.EnqueueMessage(ctx, string(b), nil); err != nil {
		// The message stays and reappears: a failure to retry.
		err = fmt.Errorf("consistency: cannot enqueue to the poison queue (%w); cause: %w", err, cause)
		w.fail(failed, failRetried, msg.Type, err)
		w.log.ErrorContext(ctx, "tablekit: cannot enqueue to the poison queue; the message stays", "id", c.id, "type", msg.Type, "err", redact.Error(err))
		return
	}
	_ = c.settle(ctx, func(receipt string) error {
		_, err := w.queue.DeleteMessage(ctx, c.id, receipt, nil)
		return err
	})
	w.fail(failed, failPoisoned, msg.Type, cause)
	w.log.WarnContext(ctx, "tablekit: message poisoned", "id", c.id, "type", msg.Type, "key", msg.Key, "err", cause)
	if w.opts.OnPoisoned != nil {
		w.notify(ctx, "OnPoisoned", func() { w.opts.OnPoisoned(msg, text, cause) })
	}
}

// failureText is what a failed message records of err (its LastError,
// its poison record): the error's line, and for a panic the stack below
// it, which Error() leaves out to stay one line.
func failureText(err error) string {
	var pe *PanicError
	if errors.As(err, &pe) && len(pe.Stack) > 0 {
		return err.Error() + "\n" + string(pe.Stack)
	}
	return err.Error()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// notify calls a user callback. A panic in it is logged at Error with its
// stack and goes no further: the message's outcome is already settled, and
// the process and its other messages must not pay for a callback's bug.
func (w *Worker) notify(ctx context.Context, name string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			w.log.ErrorContext(ctx, "tablekit: "+name+" panicked", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	f()
}

func isPanic(err error) bool {
	var pe *PanicError
	return errors.As(err, &pe)
}

// join is errors.Join that returns a lone error itself, so a Drain that
// only had failing messages returns the *FailureReport unwrapped.
func join(a, b error) error {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return errors.Join(a, b)
}
