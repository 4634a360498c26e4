package consistency

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/envelope"
	"github.com/tablekit/tablekit/internal/trace"
)

// BatchHandler applies messages of one type together (up to BatchSize,
// gathered from consecutive dequeues as Worker.HandleBatch says), so that their table work can share reads and entity
// group transactions; register it with Worker.HandleBatch. It returns one
// error per message, in order, with the meaning of a Handler's: nil when
// the message's work is done (the message is deleted), an error wrapped
// with Permanent for a message no retry can fix (it goes to the poison
// queue), any other error to let the message reappear after its back-off.
// Like a Handler it must converge to the current state of its sources, so
// that redelivery and reordering are harmless.
type BatchHandler func(ctx context.Context, msgs []*Message) []error

// errNoOutcome is a batched message's failure when its BatchHandler
// returned fewer errors than messages.
var errNoOutcome = errors.New("consistency: the batch handler returned no outcome for this message")

// openBatch is the messages of one HandleBatch type that the dequeue loop
// gathers for one call of its BatchHandler: those of one dequeue, joined
// by the type's messages of the next dequeues, until it holds BatchSize,
// has been open through maxBatchDequeues dequeues, a dequeue comes back
// with fewer messages than it asked for (the queue has no more for now),
// or the worker may hold no more calls (no dequeue comes before a call
// returns). Then it goes to its handler, to wait for a slot.
type openBatch struct {
	msgType  string
	items    []batchItem
	dequeues int // dequeues since it opened
}

// maxBatchDequeues is how many dequeues after the one that opened it a
// batch takes messages from at most: with a few batched types sharing a
// queue, enough to fill each type's batch; with one type rare among
// them, a short wait for its messages.
const maxBatchDequeues = 3

// batchItem is one held message of a batch.
type batchItem struct {
	msg *Message
	c   *claim
}

// hold claims dm, a message of a HandleBatch type with its envelope env,
// and renews its visibility from its dequeue (sent) until it is settled.
func (w *Worker) hold(ctx context.Context, dm *azqueue.DequeuedMessage, env *envelope.Envelope, sent time.Time) batchItem {
	c := w.newClaim(ctx, dm)
	c.renew(ctx, sent)
	return batchItem{newMessage(env, c.id, derefInt(dm.DequeueCount)), c}
}

// processBatch waits for the handler slots of held (slots.weight), the
// messages of one batch of msgType, then reads the payloads they keep in blobs, runs the
// BatchHandler on those whose claim still holds, calls release (the batch
// no longer counts against the worker's hold: the next dequeue may
// start), and settles each message by its own outcome, Concurrency at a
// time.
func (w *Worker) processBatch(ctx context.Context, msgType string, held []batchItem, failed *tally, slots *slots, release func()) {
	ctx, end := w.tracer.Start(ctx, "Worker.handleBatch", trace.Attr(trace.AttrQueue, w.queueName), trace.Attr(trace.AttrMessage, msgType))
	defer func() {
		for _, it := range held {
			it.c.end()
		}
	}()
	n := slots.weight(len(held))
	if !slots.acquire(ctx, n) {
		// Shut down while waiting for its slots: they reappear.
		w.count(func(s *Stats) { s.Abandoned += int64(len(held)) })
		end(ctx.Err())
		return
	}
	// A claim lost while its message waited is settled already (counted,
	// logged; another consumer may have the message); payloads kept in
	// blobs are read before the handler, as for a Handler.
	items := make([]batchItem, 0, len(held))
	for _, it := range held {
		if it.c.lostErr() != nil {
			continue
		}
		if err := w.payload(it.c.ctx, it.msg); err != nil {
			w.outcome(ctx, failed, it.msg, it.c, err)
			continue
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		slots.release(n)
		release()
		end(nil)
		return
	}
	msgs := make([]*Message, len(items))
	for i, it := range items {
		msgs[i] = it.msg
	}
	w.count(func(s *Stats) { s.Batches++ })
	start := time.Now()
	errs := w.callBatch(ctx, w.batcher(msgType), msgs)
	slots.release(n)
	w.observe(time.Since(start))
	release()
	// Settle: each message by its own outcome, Concurrency at a time.
	sem := make(chan struct{}, w.opts.Concurrency)
	var wg sync.WaitGroup
	var firstErr error
	for i, it := range items {
		err := errNoOutcome
		if i < len(errs) {
			err = errs[i]
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			w.outcome(ctx, failed, it.msg, it.c, err)
		}()
	}
	wg.Wait()
	end(firstErr)
}

// callBatch runs h, turning a panic into a *PanicError for every message of
// the batch.
func (w *Worker) callBatch(ctx context.Context, h BatchHandler, msgs []*Message) (errs []error) {
	defer func() {
		if r := recover(); r != nil {
			stack := debug.Stack()
			errs = make([]error, len(msgs))
			for i, m := range msgs {
				errs[i] = &PanicError{Type: m.Type, Key: m.Key, Value: r, Stack: stack}
			}
		}
	}()
	return h(ctx, msgs)
}

// slots bounds the messages handled at once to Concurrency: a message of a
// Handle type takes one slot, a batch takes one a message, at most all of
// them (a batch of more than Concurrency runs alone). Were a batch one
// slot, a worker at its defaults would run sixteen batches of 32 at once,
// and their table requests would come in bursts no client rate can pace.
type slots struct {
	free chan struct{}
	// gate lets one acquire of several slots take them at a time, so two
	// batches each holding part of what they need cannot wait for each
	// other.
	gate chan struct{}
}

func newSlots(n int) *slots {
	return &slots{free: make(chan struct{}, n), gate: make(chan struct{}, 1)}
}

// weight is the slots a batch of n messages takes.
func (s *slots) weight(n int) int { return max(1, min(n, cap(s.free))) }

// acquire takes n slots, waiting until they are free; it takes none and
// returns false once ctx is done.
func (s *slots) acquire(ctx context.Context, n int) bool {
	if n > 1 {
		select {
		case s.gate <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		defer func() { <-s.gate }()
	}
	for i := range n {
		select {
		case s.free <- struct{}{}:
		case <-ctx.Done():
			s.release(i)
			return false
		}
	}
	return true
}

// release frees n slots taken by acquire.
func (s *slots) release(n int) {
	for range n {
		<-s.free
	}
}
