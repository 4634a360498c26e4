package consistency

import (
	"context"
	"fmt"
	"time"

	"github.com/tablekit/tablekit/keys"
)

// ShardedSender routes each message to one queue of a set by a stable hash
// of its key (keys.ShardBucket), so all messages of a key go to the same
// queue, and so to the same Role (package consistency/ownership) while it owns that
// queue.
type ShardedSender struct {
	senders []*Sender
}

// NewShardedSender returns a sender over queues, in a fixed order that
// every sender and role of the set must share (the order is the routing).
func NewShardedSender(queues []Queue, opts *SenderOptions) (*ShardedSender, error) {
	if len(queues) == 0 {
		return nil, fmt.Errorf("%w: no queues", ErrBadOption)
	}
	s := &ShardedSender{}
	for _, q := range queues {
		s.senders = append(s.senders, NewSender(q, opts))
	}
	return s, nil
}

// QueueFor returns the index of the queue that carries key's messages.
func (s *ShardedSender) QueueFor(key string) int { return keys.ShardBucket(key, len(s.senders)) }

// Send is Sender.Send on the queue of key.
func (s *ShardedSender) Send(ctx context.Context, msgType, key string, payload any, o *WriteOptions) error {
	return s.senders[s.QueueFor(key)].Send(ctx, msgType, key, payload, o)
}

// SendAround is Sender.SendAround on the queue of key.
func (s *ShardedSender) SendAround(ctx context.Context, msgType, key string, payload any, delay time.Duration, write func() error, o *WriteOptions) error {
	return s.senders[s.QueueFor(key)].SendAround(ctx, msgType, key, payload, delay, write, o)
}
