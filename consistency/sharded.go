package consistency

import (
	"fmt"

	"github.com/tablekit/tablekit/internal/keyrules"
)

// NewShardedSender returns a Sender over queues that routes each message
// to one queue of the set by a stable hash of its key (FNV-1a),
// so all messages of a key go to the same queue, and so to the same Role
// (package consistency/ownership) while it owns that queue. Every sender
// and role of the set must share the order of queues (the order is the
// routing).
func NewShardedSender(queues []Queue, opts *SenderOptions) (*Sender, error) {
	if len(queues) == 0 {
		return nil, fmt.Errorf("%w: no queues", ErrBadOption)
	}
	s := NewSender(queues[0], opts)
	s.queues = append([]Queue(nil), queues...)
	return s, nil
}

// QueueFor returns the index of the queue that carries key's messages: 0
// for a Sender of one queue.
func (s *Sender) QueueFor(key string) int {
	if len(s.queues) == 1 {
		return 0
	}
	return keyrules.ShardBucket(key, len(s.queues))
}

// queueFor is the queue of key.
func (s *Sender) queueFor(key string) Queue { return s.queues[s.QueueFor(key)] }
