package consistency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/internal/trace"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// moveRequest is the payload of a move message: the keys, and the version
// (ETag) of the entity to move, so that a message delivered again after
// the move, when the key may hold a later entity, moves nothing.
type moveRequest struct {
	PartitionKey string `json:"pk"`
	RowKey       string `json:"rk"`
	// ETag is the version to move. Messages sent before it existed have
	// none; they move whatever the key holds when they are handled.
	ETag azcore.ETag `json:"etag,omitempty"`
}

// defaultMoveType is the message type of a Mover.
const defaultMoveType = "tablekit.move.v1"

// Target receives a moved entity: a *table.Table[T] (another table, with
// insert-or-replace), a BlobTarget, or the user's own. Its one method has
// the signature of table.Table's Upsert, so a table is a Target as it is.
type Target[T any] interface {
	// Upsert writes v to the target, replacing any earlier copy (the
	// Mover passes Mode aztables.UpdateModeReplace). It must be idempotent.
	Upsert(ctx context.Context, v *T, opts *table.UpsertOptions) error
}

var _ Target[table.Meta] = (*table.Table[table.Meta])(nil)

// BlobTarget writes moved entities as JSON blobs, one per entity.
type BlobTarget[T any] struct {
	// Blobs and Container are where the entities go (blobstore.New(client)
	// for an *azblob.Client).
	Blobs     BlobStore
	Container string
	// Name is the blob name of v. Default: "PartitionKey/RowKey".
	Name func(v *T) string
}

// Upsert writes v's JSON entity to its blob, replacing any earlier copy
// whatever opts.Mode says: a blob is written whole. Its signature is
// Target's.
func (t *BlobTarget[T]) Upsert(ctx context.Context, v *T, opts *table.UpsertOptions) error {
	body, err := tableio.Marshal(v)
	if err != nil {
		return err
	}
	name := ""
	if t.Name != nil {
		name = t.Name(v)
	} else {
		m, _ := tableio.MetaOf(v)
		name = m.PartitionKey + "/" + m.RowKey
	}
	if err := keyrules.ValidateBlobName(name); err != nil {
		return Permanent(err)
	}
	return putBlob(ctx, t.Blobs, t.Container, name, body)
}

// Source is where a Mover takes entities from. *table.Table[T] is one.
// An entity kept with copies elsewhere (an inter-partition index, index
// entities, a denormalised copy) needs a Source whose DeleteValue removes
// those copies too, for example by calling the index's Delete: a Mover
// over a plain table moves and deletes the entity alone and leaves its
// index copies pointing at an entity that is gone.
type Source[T any] interface {
	// Get reads an entity with its ETag in its Meta (not found:
	// table.ErrNotFound).
	Get(ctx context.Context, partitionKey, rowKey string, o *table.ReadOptions) (*T, error)
	// DeleteValue removes v only at the version of v's ETag: a changed
	// entity is table.ErrPreconditionFailed, a missing one
	// table.ErrNotFound (both are handled).
	DeleteValue(ctx context.Context, v *T, o *table.WriteOptions) error
	// Meta returns the Meta embedded in v.
	Meta(v *T) *table.Meta
}

var _ Source[table.Meta] = (*table.Table[table.Meta])(nil)

// Mover moves entities out of a table (the guide's Current → Archive, or to
// a blob), eventually consistently: Request enqueues the keys and the
// version to move, and Process, run by a Worker, reads the source, writes
// that version to the target (insert-or-replace), deletes the source if it
// still is that version, and returns so the worker deletes the message.
// A message whose key holds another version by then moves nothing and
// fails permanently with ErrSourceChanged. "Moving entities" in the
// package documentation tells why a crash at any step loses nothing and
// what a changed source leaves where.
//
// The Mover moves one entity; see Source for entities with index copies.
type Mover[T any] struct {
	from    Source[T]
	to      Target[T]
	sender  *Sender
	msgType string
	opts    MoverOptions
	tracer  trace.Tracer
}

// MoverOptions configure a Mover. nil means the defaults.
type MoverOptions struct {
	// TracingProvider opens a "Mover.move" span per message Process moves
	// (attributes: partition and outcome) and a "Mover.ProcessBatch" span
	// per batch (attributes: the messages, and how many were moved,
	// poisoned and retried); see "Tracing" in package table's
	// documentation. Default: zero, no spans.
	TracingProvider tracing.Provider
}

// NewMover moves entities of from (a *table.Table[T], or a Source that
// also removes index copies) to to, with messages sent by sender.
func NewMover[T any](from Source[T], to Target[T], sender *Sender, opts *MoverOptions) *Mover[T] {
	m := &Mover[T]{from: from, to: to, sender: sender, msgType: defaultMoveType}
	if opts != nil {
		m.opts = *opts
	}
	m.tracer = trace.New(m.opts.TracingProvider)
	return m
}

// setAttributes adds attrs to the span in ctx, if any.
func (m *Mover[T]) setAttributes(ctx context.Context, attrs ...tracing.Attribute) {
	m.opts.TracingProvider.NewTracer(trace.Module, "").SpanFromContext(ctx).SetAttributes(attrs...)
}

// MessageType is the type of the Mover's messages: register Process (or
// ProcessBatch) under it.
func (m *Mover[T]) MessageType() string { return m.msgType }

// Request asks for the entity under the keys to be moved, at its current
// version: two requests (a read, for the version, and the enqueue). A
// missing entity is table.ErrNotFound and sends nothing. When you have
// just read the entity, RequestValue saves the read.
func (m *Mover[T]) Request(ctx context.Context, partitionKey, rowKey string, o *WriteOptions) error {
	if err := validMoveKeys(partitionKey, rowKey); err != nil {
		return err
	}
	v, err := m.from.Get(ctx, partitionKey, rowKey, nil)
	if err != nil {
		return err
	}
	return m.RequestValue(ctx, v, nil)
}

// RequestValue asks for v's entity to be moved at the version v was read
// at (its ETag): one request (the enqueue). Without an ETag in v it fails
// with table.ErrNoETag before any request.
func (m *Mover[T]) RequestValue(ctx context.Context, v *T, o *WriteOptions) error {
	if v == nil {
		return &table.InputError{Op: opMoverRequest, Rule: table.ErrNilValue}
	}
	meta := m.from.Meta(v)
	if err := validMoveKeys(meta.PartitionKey, meta.RowKey); err != nil {
		return err
	}
	if meta.ETag == "" {
		return &table.InputError{Op: opMoverRequest, Field: "ETag", Rule: table.ErrNoETag, Detail: "read the entity first, or use Request"}
	}
	key, _ := keys.EncodeTuple(meta.PartitionKey, meta.RowKey)
	return m.sender.Send(ctx, m.msgType, key, moveRequest{PartitionKey: meta.PartitionKey, RowKey: meta.RowKey, ETag: meta.ETag}, nil)
}

func validMoveKeys(partitionKey, rowKey string) error {
	if err := keyrules.ValidatePartitionKey(partitionKey); err != nil {
		return &table.InputError{Op: opMoverRequest, Field: "PartitionKey", Rule: err}
	}
	if err := keyrules.ValidateRowKey(rowKey); err != nil {
		return &table.InputError{Op: opMoverRequest, Field: "RowKey", Rule: err}
	}
	return nil
}

// Process moves the entity a message names: a read, the target write and a
// delete (three requests), or one read when it has already moved. It is
// the Handler for MessageType (register it with Worker.Handle), so it has
// the Handler's signature and no options parameter.
func (m *Mover[T]) Process(ctx context.Context, msg *Message) (err error) {
	ctx, end := m.tracer.Start(ctx, "Mover.move")
	defer func() { end(err) }()
	return m.move(ctx, msg)
}

func (m *Mover[T]) move(ctx context.Context, msg *Message) error {
	var req moveRequest
	if err := json.Unmarshal(msg.Payload, &req); err != nil {
		return Permanent(fmt.Errorf("%w: move payload: %v", ErrMalformed, err))
	}
	m.setAttributes(ctx, trace.Attr(trace.AttrPartition, req.PartitionKey))
	src, err := m.from.Get(ctx, req.PartitionKey, req.RowKey, nil)
	if table.Is(err, table.ErrNotFound) {
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
	if err := m.to.Upsert(ctx, &cp, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
		return err
	}
	err = m.from.DeleteValue(ctx, src, nil)
	switch {
	case err == nil, table.Is(err, table.ErrNotFound):
		return nil
	case table.Is(err, table.ErrPreconditionFailed) && req.ETag != "":
		return Permanent(fmt.Errorf("%w: (%q, %q) changed while it was moved: the target holds version %s, the source a newer one", ErrSourceChanged, req.PartitionKey, req.RowKey, req.ETag))
	}
	return err
}

// moveRequestsInFlight bounds the requests of one ProcessBatch in flight:
// its partitions' reads and transactions.
const moveRequestsInFlight = 8

// maxDequeueBatch is the most messages one dequeue returns ("Get
// Messages": numofmessages 1 to 32).
const maxDequeueBatch = 32

// maxRowKeysPerQuery keeps a read of several rows of one partition within
// the service's 15 comparisons per filter: PartitionKey eq, and up to 14
// RowKey eq.
const maxRowKeysPerQuery = 14

// moveItem is one message of a batch and what became of it.
type moveItem struct {
	msg *Message
	req moveRequest
	// outcome: done (its message is deleted), poison (permanent, with
	// why), or neither: retry (left to reappear), with why in retry when
	// there is one.
	done          bool
	poison, retry error
}

// ProcessBatch is the BatchHandler for MessageType (register it with
// Worker.HandleBatch): it moves the entities msgs name, grouped by
// partition, with one read query per 14 keys and one transaction per 100
// entities for the target writes and for the source deletes ("Moving
// entities" in the package documentation has the steps, their crash
// safety and their cost). It needs a *table.Table[T] source and target;
// with any other source or target (an index-aware Source, a BlobTarget)
// each message is moved as Process moves it. Its signature is
// BatchHandler's, so it takes no options.
func (m *Mover[T]) ProcessBatch(ctx context.Context, msgs []*Message) (errs []error) {
	ctx, end := m.tracer.Start(ctx, opMoverProcessBatch)
	defer func() {
		var moved, poisoned, retried int64
		var perm permanent
		for _, err := range errs {
			switch {
			case err == nil:
			case errors.As(err, &perm):
				poisoned++
			default:
				retried++
			}
		}
		moved = int64(len(msgs)) - poisoned - retried
		m.setAttributes(ctx,
			trace.Attr(attrMessages, int64(len(msgs))),
			trace.Attr(attrMoved, moved),
			trace.Attr(attrPoisoned, poisoned),
			trace.Attr(attrRetried, retried))
		var first error
		for _, err := range errs {
			if err != nil {
				first = err
				break
			}
		}
		end(first)
	}()
	return m.processBatch(ctx, msgs)
}

// Span attributes of Mover.ProcessBatch besides trace's own.
const (
	attrMessages = "tablekit.messages"
	attrMoved    = "tablekit.moved"
	attrPoisoned = "tablekit.poisoned"
	attrRetried  = "tablekit.retried"
)

func (m *Mover[T]) processBatch(ctx context.Context, msgs []*Message) []error {
	items := make([]*moveItem, len(msgs))
	for i, msg := range msgs {
		it := &moveItem{msg: msg}
		if msg.Type != m.msgType {
			it.poison = Permanent(fmt.Errorf("%w: a %s message reached the mover of %s", ErrBadType, msg.Type, m.msgType))
		} else if err := json.Unmarshal(msg.Payload, &it.req); err != nil {
			it.poison = Permanent(fmt.Errorf("%w: move payload: %v", ErrMalformed, err))
		} else if err := validMoveKeys(it.req.PartitionKey, it.req.RowKey); err != nil {
			it.poison = Permanent(fmt.Errorf("%w: move payload: %v", ErrMalformed, err))
		}
		items[i] = it
	}
	m.moveBatch(ctx, items)
	errs := make([]error, len(items))
	for i, it := range items {
		switch {
		case it.poison != nil:
			errs[i] = it.poison
		case it.done:
		case it.retry != nil:
			errs[i] = it.retry
		default:
			errs[i] = errMoveRetried
		}
	}
	return errs
}

// errMoveRetried is the outcome of a move left to its next delivery with
// no error of its own to say why (its partition's read or write failed
// for another message).
var errMoveRetried = errors.New("consistency: move left for its next delivery")

// moveBatch moves the batch's valid items, partition by partition.
func (m *Mover[T]) moveBatch(ctx context.Context, items []*moveItem) {
	src, okSrc := m.from.(*table.Table[T])
	dst, okDst := m.to.(*table.Table[T])
	byPK := map[string][]*moveItem{}
	var order []string
	for _, it := range items {
		if it.poison != nil {
			continue
		}
		if !okSrc || !okDst {
			m.single(ctx, it)
			continue
		}
		pk := it.req.PartitionKey
		if _, seen := byPK[pk]; !seen {
			order = append(order, pk)
		}
		byPK[pk] = append(byPK[pk], it)
	}
	sem := make(chan struct{}, moveRequestsInFlight)
	var wg sync.WaitGroup
	for _, pk := range order {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			m.movePartition(ctx, src, dst, pk, byPK[pk], sem)
		}()
	}
	wg.Wait()
}

// single moves one message as Process does.
func (m *Mover[T]) single(ctx context.Context, it *moveItem) {
	err := m.Process(ctx, it.msg)
	var perm permanent
	switch {
	case err == nil:
		it.done = true
	case errors.As(err, &perm):
		it.poison = err
	default:
		it.retry = err
	}
}

// movePartition moves one partition's items: read, write, delete. Its
// caller holds a slot of sem, the batch's bound on requests in flight;
// reads beyond the first run beside it in the slots free.
func (m *Mover[T]) movePartition(ctx context.Context, src, dst *table.Table[T], pk string, items []*moveItem, sem chan struct{}) {
	// Read the sources: one query per 14 distinct keys.
	var rks []string
	seen := map[string]bool{}
	for _, it := range items {
		if !seen[it.req.RowKey] {
			seen[it.req.RowKey] = true
			rks = append(rks, it.req.RowKey)
		}
	}
	found := map[string]*T{}
	var (
		mu      sync.Mutex
		readErr error
		reads   sync.WaitGroup
	)
	read := func(chunk []string) {
		var eqs []table.Filter
		for _, rk := range chunk {
			eqs = append(eqs, table.Prop("RowKey").Eq(rk))
		}
		for v, err := range src.Query(ctx, &table.QueryOptions{Filter: table.Prop("PartitionKey").Eq(pk).And(table.Or(eqs...))}) {
			mu.Lock()
			if err != nil {
				readErr = err
			} else {
				found[src.Meta(v).RowKey] = v
			}
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}
	chunks := slices.Collect(slices.Chunk(rks, maxRowKeysPerQuery))
	for i, chunk := range chunks {
		if i == len(chunks)-1 {
			read(chunk) // in the caller's own slot
			break
		}
		select {
		case sem <- struct{}{}: // a free slot: read beside the others
			reads.Add(1)
			go func() {
				defer reads.Done()
				defer func() { <-sem }()
				read(chunk)
			}()
		default:
			read(chunk)
		}
	}
	reads.Wait()
	if readErr != nil {
		for _, it := range items {
			it.retry = readErr // every item of the partition is retried
		}
		return
	}
	// Decide each message; one move per key, of the version found.
	var moving []*moveItem
	moved := map[string]bool{}
	for _, it := range items {
		v := found[it.req.RowKey]
		switch {
		case v == nil:
			it.done = true // already moved, or never there
		case it.req.ETag != "" && src.Meta(v).ETag != it.req.ETag:
			it.poison = Permanent(fmt.Errorf("%w: move of (%q, %q) asked for version %s, the key now holds %s; nothing moved", ErrSourceChanged, pk, it.req.RowKey, it.req.ETag, src.Meta(v).ETag))
		case moved[it.req.RowKey]:
			it.done = true // a duplicate in the same batch: moved below
		default:
			moved[it.req.RowKey] = true
			moving = append(moving, it)
		}
	}
	if len(moving) == 0 {
		return
	}
	// Write the targets, then delete the sources at the versions read.
	var puts, dels []batch.Op
	for _, it := range moving {
		v := found[it.req.RowKey]
		cp := *v
		puts = append(puts, batch.Upsert(&cp, aztables.UpdateModeReplace))
		dels = append(dels, batch.Delete(pk, it.req.RowKey).IfMatch(src.Meta(v).ETag))
	}
	if err := submitAll(ctx, dst.Client(), puts); err != nil {
		for _, it := range moving {
			it.retry = err // the next delivery writes again (insert-or-replace)
		}
		return
	}
	if err := submitAll(ctx, src.Client(), dels); err == nil {
		for _, it := range moving {
			it.done = true
		}
		return
	}
	// A transaction refused: settle entity by entity.
	for _, it := range moving {
		etag := src.Meta(found[it.req.RowKey]).ETag
		err := src.Delete(ctx, pk, it.req.RowKey, &table.DeleteOptions{IfMatch: &etag, IfExists: true})
		switch {
		case err == nil:
			it.done = true
		case table.Is(err, table.ErrPreconditionFailed) && it.req.ETag != "":
			it.poison = Permanent(fmt.Errorf("%w: (%q, %q) changed while it was moved: the target holds version %s, the source a newer one", ErrSourceChanged, pk, it.req.RowKey, it.req.ETag))
		default:
			it.retry = err
		}
	}
}

// submitAll sends ops as the fewest valid transactions.
func submitAll(ctx context.Context, client table.Client, ops []batch.Op) error {
	txs, err := batch.Plan(ops, nil)
	if err != nil {
		return err
	}
	for _, tx := range txs {
		if _, err := tx.Submit(ctx, client, nil); err != nil {
			return err
		}
	}
	return nil
}
