package consistency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/redact"
)

// BatchHandler applies the messages of one dequeue together (up to 32, all
// of the handler's type), so that their table work can share reads and
// entity group transactions. It returns one error per message, in order:
// nil when the message's work is done (its message is then deleted), an
// error wrapped with Permanent for a message no retry can fix (it goes to
// the poison queue), any other error to leave the message to reappear
// after its visibility timeout. Like a Handler, it must converge to the
// current state of its sources, so that redelivery and reordering are
// harmless.
type BatchHandler func(ctx context.Context, msgs []*Message) []error

// HandleBatches drains queue, a queue of msgType's messages only, in
// batches: each dequeue takes 32 messages, h applies them together, and
// then the done messages are deleted (Concurrency at a time, overlapping
// the next batch's dequeue and work) and the permanent failures go to
// poison. It returns when a dequeue finds the queue empty. opts' Logger,
// Visibility, Concurrency and MaxDequeues apply as to Mover.MoveBatches;
// the poll intervals do not (it does not wait for messages).
//
// A message is deleted only after h reported its work done, so a crash at
// any step leaves it to be delivered again. Messages of other types and
// payloads kept in blobs go to poison: give a batched handler its own
// queue, and keep its payloads small.
func HandleBatches(ctx context.Context, queue, poison Queue, msgType string, h BatchHandler, opts *BatchOptions) (Stats, error) {
	var st Stats
	if h == nil || queue == nil || poison == nil {
		return st, fmt.Errorf("%w: HandleBatches needs a queue, a poison queue and a handler", ErrBadOption)
	}
	if err := checkType(msgType); err != nil {
		return st, err
	}
	err := handleBatches(ctx, queue, poison, msgType, h, batchDefaults(opts), &st)
	return st, redact.Error(err)
}

// handleBatches is HandleBatches' loop, counting into st; Mover.MoveBatches
// runs on it too, with its moves as the handler.
func handleBatches(ctx context.Context, queue, poison Queue, msgType string, h BatchHandler, o *BatchOptions, st *Stats) error {
	// A batch's message deletes (32 at Concurrency at a time: the longest
	// step) overlap the next batch's dequeue and work: the next batch's
	// messages are others (these are invisible until deleted) and its work
	// starts after this batch's is complete, so every message is still
	// deleted only after its work.
	deleting := func() {}
	defer func() { deleting() }()
	for {
		resp, err := queue.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{
			NumberOfMessages:  to.Ptr(int32(maxDequeueBatch)),
			VisibilityTimeout: to.Ptr(int32(o.Visibility / time.Second)),
		})
		if err != nil {
			return err
		}
		if len(resp.Messages) == 0 {
			return nil
		}
		st.Batches++
		st.Dequeued += int64(len(resp.Messages))
		items := make([]*batchItem, len(resp.Messages))
		var msgs []*Message
		var valid []*batchItem
		for i, dm := range resp.Messages {
			it := decodeBatchItem(dm, msgType, o.MaxDequeues)
			items[i] = it
			if it.poison == nil {
				msgs = append(msgs, it.msg)
				valid = append(valid, it)
			}
		}
		if len(msgs) > 0 {
			errs := h(ctx, msgs)
			for i, it := range valid {
				var err error
				if i < len(errs) {
					err = errs[i]
				} else {
					err = errors.New("consistency: the batch handler returned no outcome for this message")
				}
				var perm permanent
				switch {
				case err == nil:
					it.done = true
				case errors.As(err, &perm):
					it.poison = err
				case o.Logger != nil:
					o.Logger.WarnContext(ctx, "tablekit: a batched message failed; it reappears after its visibility timeout", "type", msgType, "id", it.msg.ID, "err", redact.Error(err))
				}
			}
		}
		deleting()
		deleting = finishBatch(ctx, queue, poison, items, o, st)
	}
}

// batchItem is one dequeued message of HandleBatches and its outcome.
type batchItem struct {
	dm     *azqueue.DequeuedMessage
	text   string
	env    *Envelope
	msg    *Message
	done   bool
	poison error
}

// decodeBatchItem reads a message; a bad one is marked for poison.
func decodeBatchItem(dm *azqueue.DequeuedMessage, msgType string, maxDequeues int64) *batchItem {
	it := &batchItem{dm: dm, text: deref(dm.MessageText)}
	env, err := decodeEnvelope(it.text)
	switch {
	case err != nil:
		it.poison = err
	case env.Type != msgType:
		it.env, it.poison = env, fmt.Errorf("consistency: message type %q in the queue of the batched handler of %q", env.Type, msgType)
	case env.PayloadBlob != nil:
		it.env, it.poison = env, fmt.Errorf("%w: a batched handler's payload in a blob", ErrMalformed)
	case derefInt(dm.DequeueCount) > maxDequeues:
		it.env, it.poison = env, fmt.Errorf("consistency: gave up after %d deliveries; last error: %s", derefInt(dm.DequeueCount)-1, env.LastError)
	default:
		it.env = env
		it.msg = &Message{Envelope: *env, ID: deref(dm.MessageID), DequeueCount: derefInt(dm.DequeueCount)}
	}
	return it
}

// finishBatch poisons the bad messages and deletes the done ones; the rest
// reappear after their visibility timeout. It counts and poisons before it
// returns; the deletes go on, and wait waits for them.
func finishBatch(ctx context.Context, queue, poison Queue, items []*batchItem, o *BatchOptions, st *Stats) (wait func()) {
	type receipt struct{ id, pop string }
	var dels []receipt
	for _, it := range items {
		id, pop := deref(it.dm.MessageID), deref(it.dm.PopReceipt)
		switch {
		case it.poison != nil:
			rec := PoisonRecord{MessageID: id, DequeueCount: derefInt(it.dm.DequeueCount), Error: truncate(it.poison.Error(), 4096), PoisonedAt: time.Now().UTC(), Envelope: it.env}
			if it.env == nil {
				rec.Raw = truncate(it.text, MaxMessageBytes/2)
			}
			b, _ := json.Marshal(rec)
			if _, err := poison.EnqueueMessage(ctx, string(b), nil); err != nil {
				st.Retried++
				continue
			}
			if o.Logger != nil {
				o.Logger.WarnContext(ctx, "tablekit: batched message poisoned", "id", id, "err", redact.Error(it.poison))
			}
			st.Poisoned++
		case it.done:
			st.Processed++
		default:
			st.Retried++
			continue
		}
		dels = append(dels, receipt{id, pop})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sem := make(chan struct{}, o.Concurrency)
		var wg sync.WaitGroup
		for _, d := range dels {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if _, err := queue.DeleteMessage(ctx, d.id, d.pop, nil); err != nil && o.Logger != nil {
					// It reappears and its handler converges again: harmless.
					o.Logger.WarnContext(ctx, "tablekit: delete of a handled message failed", "id", d.id, "err", redact.Error(err))
				}
			}()
		}
		wg.Wait()
	}()
	return func() { <-done }
}
