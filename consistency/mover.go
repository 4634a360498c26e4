package consistency

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// MoveRequest is the payload of a move message: keys only, so the handler
// always moves the entity as it is when the message is handled.
type MoveRequest struct {
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
}

// DefaultMoveType is the message type of a Mover.
const DefaultMoveType = "tablekit.move.v1"

// Target receives a moved entity: another table, or a blob.
type Target[T any] interface {
	// Put writes v to the target, replacing any earlier copy. It must be
	// idempotent.
	Put(ctx context.Context, v *T) error
}

// TableTarget writes moved entities to a table with insert-or-replace.
type TableTarget[T any] struct{ Table *table.Table[T] }

// Put upserts v (replace).
func (t TableTarget[T]) Put(ctx context.Context, v *T) error {
	return UpsertReplace(ctx, t.Table, v)
}

// BlobTarget writes moved entities as JSON blobs, one per entity.
type BlobTarget[T any] struct {
	Blobs     Blobs
	Container string
	// Name is the blob name of v. Default: "PartitionKey/RowKey".
	Name  func(v *T) string
	codec table.Codec
}

// Put writes v's JSON entity to its blob, replacing any earlier copy.
func (t *BlobTarget[T]) Put(ctx context.Context, v *T) error {
	body, err := t.codec.Marshal(v)
	if err != nil {
		return err
	}
	name := ""
	if t.Name != nil {
		name = t.Name(v)
	} else {
		m, _ := t.codec.MetaOf(v)
		name = m.PartitionKey + "/" + m.RowKey
	}
	if err := keys.ValidateBlobName(name); err != nil {
		return Permanent(err)
	}
	return PutBlob(ctx, t.Blobs, t.Container, name, body)
}

// Mover moves entities out of a table (the guide's Current → Archive, or to
// a blob), eventually consistently: Request enqueues the keys, and Handle,
// run by a Worker, reads the source, writes it to the target
// (insert-or-replace), deletes the source if it still is the version it
// read, and returns so the worker deletes the message. A crash between any
// two steps leaves a state from which the redelivered message completes the
// move: before the write, nothing happened; after the write, the write is
// repeated and the delete done; after the delete, the source is gone and the
// handler has nothing left to do. A source changed between the read and the
// delete makes the delete fail, and the retry moves the newer version.
type Mover[T any] struct {
	from    *table.Table[T]
	to      Target[T]
	sender  *Sender
	msgType string
}

// NewMover moves entities of from to to, with messages sent by sender.
func NewMover[T any](from *table.Table[T], to Target[T], sender *Sender) *Mover[T] {
	return &Mover[T]{from: from, to: to, sender: sender, msgType: DefaultMoveType}
}

// Type is the message type to register Handle under.
func (m *Mover[T]) Type() string { return m.msgType }

// Request asks for the entity to be moved: one request (the enqueue).
func (m *Mover[T]) Request(ctx context.Context, partitionKey, rowKey string) error {
	if err := keys.ValidatePartitionKey(partitionKey); err != nil {
		return err
	}
	if err := keys.ValidateRowKey(rowKey); err != nil {
		return err
	}
	key, _ := keys.EncodeTuple(partitionKey, rowKey)
	return m.sender.Send(ctx, m.msgType, key, MoveRequest{PartitionKey: partitionKey, RowKey: rowKey})
}

// Handle moves the entity a message names: a read, the target write and a
// delete (three requests), or one read when it has already moved.
func (m *Mover[T]) Handle(ctx context.Context, msg *Message) error {
	var req MoveRequest
	if err := json.Unmarshal(msg.Payload, &req); err != nil {
		return Permanent(fmt.Errorf("%w: move payload: %v", ErrMalformed, err))
	}
	src, err := m.from.Get(ctx, req.PartitionKey, req.RowKey, nil)
	if table.IsNotFound(err) {
		return nil // already moved (or never there): nothing left to do
	}
	if err != nil {
		return err
	}
	etag := m.from.Meta(src).ETag
	if err := m.to.Put(ctx, src); err != nil {
		return err
	}
	return DeleteIfUnchanged(ctx, m.from, req.PartitionKey, req.RowKey, etag)
}
