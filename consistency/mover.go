package consistency

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// MoveRequest is the payload of a move message: the keys, and the version
// (ETag) of the entity to move, so that a message delivered again after
// the move, when the key may hold a later entity, moves nothing.
type MoveRequest struct {
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
	// ETag is the version to move. Messages sent before it existed have
	// none; they move whatever the key holds when they are handled.
	ETag azcore.ETag `json:"etag,omitempty"`
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

// Source is where a Mover takes entities from. *table.Table[T] is one.
// An entity kept with copies elsewhere (an inter-partition index, index
// entities, a denormalised copy) needs a Source whose DeleteValue removes
// those copies too, for example by calling the index's Delete: a Mover
// over a plain table moves and deletes the entity alone and leaves its
// index copies pointing at an entity that is gone.
type Source[T any] interface {
	// Get reads an entity with its ETag in its Meta (not found:
	// table.IsNotFound).
	Get(ctx context.Context, partitionKey, rowKey string, o *table.GetOptions) (*T, error)
	// DeleteValue removes v only at the version of v's ETag: a changed
	// entity is table.ErrPreconditionFailed, a missing one
	// table.ErrNotFound (both are handled).
	DeleteValue(ctx context.Context, v *T) error
	// Meta returns the Meta embedded in v.
	Meta(v *T) *table.Meta
}

var _ Source[table.Meta] = (*table.Table[table.Meta])(nil)

// Mover moves entities out of a table (the guide's Current → Archive, or to
// a blob), eventually consistently: Request enqueues the keys and the
// version to move, and Handle, run by a Worker, reads the source, writes
// that version to the target (insert-or-replace), deletes the source if it
// still is that version, and returns so the worker deletes the message.
//
// A crash between any two steps leaves a state from which the redelivered
// message completes the move: before the write, nothing happened; after
// the write, the write is repeated and the delete done; after the delete,
// the source is gone and the handler has nothing left to do.
//
// A message moves only the version it names. If the key holds another
// version when the message is handled (the entity changed after the
// request, or the move is done and the key was reused, and the message is
// delivered again) nothing more is moved or deleted and the message fails
// permanently with ErrSourceChanged, so it lands in the poison queue for
// an operator to see; request the move again to move the newer version.
// If the source changed between the handler's write and its delete, the
// target keeps the requested version and the source the newer one.
//
// The Mover moves one entity; see Source for entities with index copies.
type Mover[T any] struct {
	from    Source[T]
	to      Target[T]
	sender  *Sender
	msgType string
}

// NewMover moves entities of from (a *table.Table[T], or a Source that
// also removes index copies) to to, with messages sent by sender.
func NewMover[T any](from Source[T], to Target[T], sender *Sender) *Mover[T] {
	return &Mover[T]{from: from, to: to, sender: sender, msgType: DefaultMoveType}
}

// Type is the message type to register Handle under.
func (m *Mover[T]) Type() string { return m.msgType }

// Request asks for the entity under the keys to be moved, at its current
// version: two requests (a read, for the version, and the enqueue). A
// missing entity is table.ErrNotFound and sends nothing. When you have
// just read the entity, RequestValue saves the read.
func (m *Mover[T]) Request(ctx context.Context, partitionKey, rowKey string) error {
	if err := validMoveKeys(partitionKey, rowKey); err != nil {
		return err
	}
	v, err := m.from.Get(ctx, partitionKey, rowKey, nil)
	if err != nil {
		return err
	}
	return m.RequestValue(ctx, v)
}

// RequestValue asks for v's entity to be moved at the version v was read
// at (its ETag): one request (the enqueue). Without an ETag in v it fails
// with table.ErrNoETag before any request.
func (m *Mover[T]) RequestValue(ctx context.Context, v *T) error {
	if v == nil {
		return &table.InputError{Op: "Mover.Request", Rule: table.ErrNilValue}
	}
	meta := m.from.Meta(v)
	if err := validMoveKeys(meta.PartitionKey, meta.RowKey); err != nil {
		return err
	}
	if meta.ETag == "" {
		return &table.InputError{Op: "Mover.Request", Field: "ETag", Rule: table.ErrNoETag, Detail: "read the entity first, or use Request"}
	}
	key, _ := keys.EncodeTuple(meta.PartitionKey, meta.RowKey)
	return m.sender.Send(ctx, m.msgType, key, MoveRequest{PartitionKey: meta.PartitionKey, RowKey: meta.RowKey, ETag: meta.ETag})
}

func validMoveKeys(partitionKey, rowKey string) error {
	if err := keys.ValidatePartitionKey(partitionKey); err != nil {
		return &table.InputError{Op: "Mover.Request", Field: "PartitionKey", Rule: err}
	}
	if err := keys.ValidateRowKey(rowKey); err != nil {
		return &table.InputError{Op: "Mover.Request", Field: "RowKey", Rule: err}
	}
	return nil
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
	if req.ETag != "" && etag != req.ETag {
		return Permanent(fmt.Errorf("%w: move of (%q, %q) asked for version %s, the key now holds %s; nothing moved", ErrSourceChanged, req.PartitionKey, req.RowKey, req.ETag, etag))
	}
	// The target gets a copy: writing it may set the copy's Meta to the
	// target's version, and the delete below needs the source's.
	cp := *src
	if err := m.to.Put(ctx, &cp); err != nil {
		return err
	}
	err = m.from.DeleteValue(ctx, src)
	switch {
	case err == nil, table.IsNotFound(err):
		return nil
	case table.IsPreconditionFailed(err) && req.ETag != "":
		return Permanent(fmt.Errorf("%w: (%q, %q) changed while it was moved: the target holds version %s, the source a newer one", ErrSourceChanged, req.PartitionKey, req.RowKey, req.ETag))
	}
	return err
}
