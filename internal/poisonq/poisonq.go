// Package poisonq is what an operator does with a consistency Worker's
// poison queue: look at what failed, put messages back on the work queue
// once the cause is fixed, or drop them. The tablekit command's poison
// commands are built on it.
package poisonq

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/envelope"
	"github.com/tablekit/tablekit/internal/redact"
)

// Client is the part of *azqueue.QueueClient a Queue uses on the poison
// queue: the worker's consistency.Queue verbs plus peek and clear.
type Client interface {
	consistency.Queue
	PeekMessages(ctx context.Context, o *azqueue.PeekMessagesOptions) (azqueue.PeekMessagesResponse, error)
	ClearMessages(ctx context.Context, o *azqueue.ClearMessagesOptions) (azqueue.ClearMessagesResponse, error)
	GetProperties(ctx context.Context, o *azqueue.GetQueuePropertiesOptions) (azqueue.GetQueuePropertiesResponse, error)
}

var _ Client = (*azqueue.QueueClient)(nil)

// maxPeekMessages is the most messages one Peek Messages call returns
// (Queue service REST API, Peek Messages: numofmessages 1 to 32).
const maxPeekMessages = 32

// maxGetMessages is the most messages one Get Messages call returns (Queue
// service REST API, Get Messages: numofmessages 1 to 32).
const maxGetMessages = 32

// Queue is a worker's poison queue with the work queue its messages came
// from.
type Queue struct {
	poison Client
	work   consistency.Queue
}

// New returns a Queue over the poison queue a Worker writes to and the
// work queue it reads (where Replay puts messages back).
func New(poison Client, work consistency.Queue) *Queue {
	return &Queue{poison: poison, work: work}
}

// Poisoned is one message of the poison queue: the record the worker wrote,
// or, when the text is not a record, Text alone.
type Poisoned struct {
	// ID is the poison queue's id of this message (not the original's).
	ID string
	// Record is what the worker recorded; nil when Text is not a record.
	Record *envelope.PoisonRecord
	// Text is the message's text as stored.
	Text string
}

// Type is the original message's type, or "" when it had none (malformed).
func (p *Poisoned) Type() string {
	if p.Record != nil && p.Record.Envelope != nil {
		return p.Record.Envelope.Type
	}
	return ""
}

// original is the text to put back on the work queue, or false when there
// is none (the text is not a record the worker wrote).
func (p *Poisoned) original() (string, bool, error) {
	switch {
	case p.Record == nil:
		return "", false, nil
	case p.Record.Envelope != nil:
		s, err := encode(p.Record.Envelope)
		return s, true, err
	case p.Record.Raw != "":
		return p.Record.Raw, true, nil
	}
	return "", false, nil
}

func poisoned(id, text string) Poisoned {
	p := Poisoned{ID: id, Text: text}
	var rec envelope.PoisonRecord
	if json.Unmarshal([]byte(text), &rec) == nil && rec.MessageID != "" {
		p.Record = &rec
	}
	return p
}

// encode renders an envelope as message text, as the Sender does, or
// reports that it is too large for a message.
func encode(e *envelope.Envelope) (string, error) {
	s, fits, err := e.Text()
	if err == nil && !fits {
		err = consistency.ErrMessageTooLarge
	}
	return s, err
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Peek is what Queue.Peek saw: the first messages and the queue's
// approximate length.
type Peek struct {
	Messages []Poisoned
	// Approximate is the service's approximate message count.
	Approximate int
}

// Peek returns the first messages of the poison queue without changing
// them (the service shows at most maxPeekMessages at a time), and the
// queue's approximate length. It costs two requests.
func (q *Queue) Peek(ctx context.Context, opts *Options) (*Peek, error) {
	p, err := q.peek(ctx, opts)
	return p, redact.Error(err) // a transport error names the URL, SAS token included
}

func (q *Queue) peek(ctx context.Context, opts *Options) (*Peek, error) {
	n := maxPeekMessages
	if opts != nil && opts.Max != 0 {
		n = opts.Max
	}
	if n < 1 || n > maxPeekMessages {
		return nil, fmt.Errorf("%w: Options.Max %d, want 1 to %d", consistency.ErrBadOption, n, maxPeekMessages)
	}
	props, err := q.poison.GetProperties(ctx, nil)
	if err != nil {
		return nil, err
	}
	resp, err := q.poison.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: to.Ptr(int32(n))})
	if err != nil {
		return nil, err
	}
	out := &Peek{}
	if props.ApproximateMessagesCount != nil {
		out.Approximate = int(*props.ApproximateMessagesCount)
	}
	for _, m := range resp.Messages {
		out.Messages = append(out.Messages, poisoned(deref(m.MessageID), deref(m.MessageText)))
	}
	return out, nil
}

// Options configure a Queue's Peek, Replay and Purge. nil
// means the defaults: every message, the most Peek can show.
type Options struct {
	// Max is how many messages Peek returns, 1 to 32 (the service's limit
	// for Peek Messages). Default: 32.
	Max int
	// Match, when set, is asked by Replay and Purge about each message;
	// false leaves it in the poison queue. Default: every message matches.
	Match func(*Poisoned) bool
	// Visibility hides a message while it is examined, in whole seconds
	// (at least 1 s), as consistency.WorkerOptions.Visibility does. Default (0): 60 s.
	// Negative or below 1 s: consistency.ErrBadOption, before any request.
	Visibility time.Duration
}

// defaultPoisonVisibility is Options.Visibility's default:
// long enough to replay a batch of 32 messages.
const defaultPoisonVisibility = 60 * time.Second

// withDefaults checks o and fills in its defaults; nil is the defaults.
func (o *Options) withDefaults() (Options, error) {
	var out Options
	if o != nil {
		out = *o
	}
	switch {
	case out.Visibility == 0:
		out.Visibility = defaultPoisonVisibility
	case out.Visibility < time.Second:
		return out, fmt.Errorf("%w: Options.Visibility %v: at least 1 s (the service counts whole seconds), 0 for the default", consistency.ErrBadOption, out.Visibility)
	}
	return out, nil
}

// Summary counts what Replay or Purge did.
type Summary struct {
	// Done is how many messages were replayed (or purged).
	Done int
	// Kept is how many were left in the poison queue: not matched, or not
	// replayable (a text the worker did not write).
	Kept int
}

// Replay puts matching messages back on the work queue, as they were first
// sent, and deletes them from the poison queue. Run it once the cause of
// the failures is fixed.
//
// Each message is enqueued on the work queue, then deleted from the poison
// queue. A crash between the two leaves it in both: the next Replay sends it
// again, and the handler sees it twice, which handlers that converge to the
// source's current state (as every tablekit handler does) make harmless.
// Messages that do not match are hidden while the queue is read and made
// visible again at the end (or after Visibility if the process dies).
func (q *Queue) Replay(ctx context.Context, opts *Options) (Summary, error) {
	sum, err := q.replay(ctx, opts)
	return sum, redact.Error(err) // a transport error names the URL, SAS token included
}

func (q *Queue) replay(ctx context.Context, opts *Options) (Summary, error) {
	return q.each(ctx, opts, func(p *Poisoned) (bool, error) {
		text, ok, err := p.original()
		if err != nil || !ok {
			return false, err
		}
		_, err = q.work.EnqueueMessage(ctx, text, nil)
		return err == nil, err
	})
}

// Purge deletes matching messages from the poison queue. With no Match it
// clears the queue in one request.
func (q *Queue) Purge(ctx context.Context, opts *Options) (Summary, error) {
	sum, err := q.purge(ctx, opts)
	return sum, redact.Error(err) // a transport error names the URL, SAS token included
}

func (q *Queue) purge(ctx context.Context, opts *Options) (Summary, error) {
	// The options are checked the same with or without Match: a bad value
	// must not clear the queue.
	if _, err := opts.withDefaults(); err != nil {
		return Summary{}, err
	}
	if opts == nil || opts.Match == nil {
		props, err := q.poison.GetProperties(ctx, nil)
		if err != nil {
			return Summary{}, err
		}
		if _, err := q.poison.ClearMessages(ctx, nil); err != nil {
			return Summary{}, err
		}
		n := 0
		if props.ApproximateMessagesCount != nil {
			n = int(*props.ApproximateMessagesCount)
		}
		return Summary{Done: n}, nil
	}
	return q.each(ctx, opts, func(*Poisoned) (bool, error) { return true, nil })
}

// each dequeues the whole poison queue in batches; act decides, for each
// matching message, whether it is done (then it is deleted). The others are
// shown again once the queue has been read.
func (q *Queue) each(ctx context.Context, opts *Options, act func(*Poisoned) (bool, error)) (Summary, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return Summary{}, err
	}
	// A kept message is shown again with its own text: Update Message
	// replaces the text with what it is given.
	type held struct{ id, receipt, text string }
	var kept []held
	var sum Summary
	// Show the kept ones again, also when the loop stops on an error: a
	// fresh context, since ctx may be what ended it.
	defer func() {
		for _, h := range kept {
			_, _ = q.poison.UpdateMessage(context.WithoutCancel(ctx), h.id, h.receipt, h.text, &azqueue.UpdateMessageOptions{VisibilityTimeout: to.Ptr(int32(0))})
		}
	}()
	for {
		resp, err := q.poison.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{
			NumberOfMessages:  to.Ptr(int32(maxGetMessages)),
			VisibilityTimeout: to.Ptr(int32(o.Visibility / time.Second)),
		})
		if err != nil {
			return sum, err
		}
		if len(resp.Messages) == 0 {
			return sum, nil
		}
		for _, m := range resp.Messages {
			p := poisoned(deref(m.MessageID), deref(m.MessageText))
			h := held{deref(m.MessageID), deref(m.PopReceipt), deref(m.MessageText)}
			done := false
			if o.Match == nil || o.Match(&p) {
				if done, err = act(&p); err != nil {
					kept = append(kept, h)
					return sum, err
				}
			}
			if !done {
				kept = append(kept, h)
				sum.Kept++
				continue
			}
			if _, err := q.poison.DeleteMessage(ctx, h.id, h.receipt, nil); err != nil {
				return sum, err
			}
			sum.Done++
		}
	}
}
