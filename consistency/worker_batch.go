package consistency

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/trace"
)

// BatchHandler applies the messages of one type that one dequeue returned
// (up to 32) together, so that their table work can share reads and entity
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

// batchedType is the type of dm when a BatchHandler is registered for it,
// else "" (a malformed message, or one for a Handler, goes on its own).
func (w *Worker) batchedType(dm *azqueue.DequeuedMessage) string {
	if !w.batching() {
		return ""
	}
	env, err := decodeEnvelope(deref(dm.MessageText))
	if err != nil || w.batcher(env.Type) == nil {
		return ""
	}
	return env.Type
}

// batchItem is one held message of a batch.
type batchItem struct {
	msg *Message
	c   *claim
}

// processBatch handles the messages of one dequeue that msgType's
// BatchHandler takes: it holds and renews each from its dequeue, poisons
// those over MaxDequeues, reads payloads kept in blobs, waits for one
// handler slot, runs the handler on the rest, calls release (the messages
// no longer count against the worker's hold: the next dequeue may start),
// then settles each message by its own outcome, Concurrency at a time.
func (w *Worker) processBatch(ctx context.Context, msgType string, dms []*azqueue.DequeuedMessage, dequeued time.Time, failed *tally, slots chan struct{}, release func()) {
	ctx, end := w.tracer.Start(ctx, "Worker.handleBatch", trace.Attr(trace.AttrQueue, w.queueName), trace.Attr(trace.AttrMessage, msgType))
	var items []batchItem
	for _, dm := range dms {
		c := w.newClaim(ctx, dm)
		defer c.end()
		env, err := decodeEnvelope(c.text)
		if err != nil { // decoded once already: cannot happen
			w.toPoison(ctx, failed, &Message{ID: c.id, DequeueCount: derefInt(dm.DequeueCount)}, c, err)
			continue
		}
		msg := &Message{Envelope: *env, ID: c.id, DequeueCount: derefInt(dm.DequeueCount)}
		if msg.DequeueCount > w.opts.MaxDequeues {
			w.toPoison(ctx, failed, msg, c, fmt.Errorf("consistency: gave up after %d deliveries; last error: %s", msg.DequeueCount-1, env.LastError))
			continue
		}
		c.renew(ctx, dequeued)
		items = append(items, batchItem{msg, c})
	}
	// Payloads kept in blobs, read before the handler as for a Handler.
	live := items[:0]
	for _, it := range items {
		if err := w.payload(it.c.ctx, it.msg); err != nil {
			w.outcome(ctx, failed, it.msg, it.c, err)
			continue
		}
		live = append(live, it)
	}
	items = live
	if len(items) == 0 {
		end(nil)
		return
	}
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		// Shut down while waiting for a slot: they reappear.
		w.count(func(s *Stats) { s.Abandoned += int64(len(items)) })
		end(ctx.Err())
		return
	}
	msgs := make([]*Message, len(items))
	for i, it := range items {
		msgs[i] = it.msg
	}
	w.count(func(s *Stats) { s.Batches++ })
	errs := w.callBatch(ctx, w.batcher(msgType), msgs)
	<-slots
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
