package patterns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// IDList is where a value's list of entity IDs lives, for the eventually
// consistent index-entity options: RemoteIndexEntities (option 3, an index
// table) or BlobIndex (option 1, a blob per value).
type IDList interface {
	// Add and Remove change one value's list idempotently, retrying lost
	// races on its ETag.
	Add(ctx context.Context, value, id string, options *IDListAddOptions) error
	Remove(ctx context.Context, value, id string, options *IDListRemoveOptions) error
	// IDs returns the list: one request.
	IDs(ctx context.Context, value string, options *IDListIDsOptions) ([]string, error)
}

// IDListAddOptions configure IDList.Add. There are none yet; pass nil.
type IDListAddOptions struct{}

// IDListRemoveOptions configure IDList.Remove. There are none yet; pass nil.
type IDListRemoveOptions struct{}

// IDListIDsOptions configure IDList.IDs. There are none yet; pass nil.
type IDListIDsOptions struct{}

// RemoteIndexEntities keeps value → IDs lists as index entities in another
// partition or table (option 3: the guide's EmployeeDetails for a last
// name across departments): PartitionKey is the partition given, RowKeys
// are as in IndexEntities, and a list outgrowing 1 MiB continues in further
// index entities of the value. Each change of a list is one update guarded
// by its ETag.
type RemoteIndexEntities struct {
	client    table.Client
	partition string
	x         *IndexEntities[listOwner]
	retry     table.RetryOptions
}

// listOwner stands in for the indexed type: the lists are kept apart from
// the entities, so only their keys matter.
type listOwner struct{ table.Meta }

// NewRemoteIndexEntities stores lists in client's table under partition,
// with RowKeys that start with prefix.
func NewRemoteIndexEntities(client table.Client, partition, prefix string, opts *IndexEntitiesOptions) (*RemoteIndexEntities, error) {
	if err := keys.ValidatePartitionKey(partition); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDefinition, err)
	}
	x, err := NewIndexEntities[listOwner](client, prefix, func(*listOwner) string { return "" }, opts)
	if err != nil {
		return nil, err
	}
	return &RemoteIndexEntities{client: client, partition: partition, x: x, retry: x.retry}, nil
}

func (r *RemoteIndexEntities) change(ctx context.Context, name string, op func(parts []indexPart) (*batch.Op, error), value string) error {
	_, err := table.RetryOnConflict(ctx, &r.retry, func(int) error {
		parts, err := r.x.read(ctx, name, r.partition, value)
		if err != nil {
			return err
		}
		o, err := op(parts)
		if err != nil || o == nil {
			return err
		}
		_, err = batch.Submit(ctx, r.client, *o)
		return err
	})
	return err
}

// Add puts id in value's list (no change if it is there).
func (r *RemoteIndexEntities) Add(ctx context.Context, value, id string, options *IDListAddOptions) error {
	return r.change(ctx, "RemoteIndexEntities.Add", func(parts []indexPart) (*batch.Op, error) {
		if containsID(parts, id) {
			return nil, nil
		}
		o, err := r.x.addTo(r.partition, value, id, parts)
		return &o, err
	}, value)
}

// Remove takes id out of value's list (no change if it is not there).
func (r *RemoteIndexEntities) Remove(ctx context.Context, value, id string, options *IDListRemoveOptions) error {
	return r.change(ctx, "RemoteIndexEntities.Remove", func(parts []indexPart) (*batch.Op, error) {
		o, ok := r.x.removeFrom(r.partition, value, id, parts)
		if !ok {
			return nil, nil
		}
		return &o, nil
	}, value)
}

// IDs returns value's list: one query.
func (r *RemoteIndexEntities) IDs(ctx context.Context, value string, options *IDListIDsOptions) ([]string, error) {
	return r.x.lookup(ctx, "RemoteIndexEntities.IDs", r.partition, value)
}

// BlobIndex keeps value → IDs lists in blobs, one per value (option 1), for
// lists beyond what index entities hold. A change reads the blob and writes
// it back with If-Match (If-None-Match: * when it is new), retrying lost
// races.
type BlobIndex struct {
	blobs     blobstore.Client
	container string
	prefix    string
	retry     table.RetryOptions
}

// NewBlobIndex keeps lists in container under names that start with prefix.
func NewBlobIndex(blobs blobstore.Client, container, prefix string) (*BlobIndex, error) {
	if err := keys.ValidateContainerName(container); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDefinition, err)
	}
	return &BlobIndex{blobs: blobs, container: container, prefix: prefix, retry: table.RetryOptions{MaxAttempts: 64, BaseDelay: 5 * time.Millisecond, MaxDelay: 500 * time.Millisecond}}, nil
}

func (b *BlobIndex) name(value string) (string, error) {
	enc, err := keys.EncodeTuple(value)
	if err != nil {
		return "", err
	}
	n := b.prefix + enc
	return n, keys.ValidateBlobName(n)
}

// read returns the list and its ETag ("" when the blob does not exist).
func (b *BlobIndex) read(ctx context.Context, name string) ([]string, azcore.ETag, error) {
	resp, err := b.blobs.DownloadStream(ctx, b.container, name, nil)
	err = redact.Error(err) // a transport error names the URL, SAS token included
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	var ids []string
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &ids); err != nil {
			return nil, "", fmt.Errorf("patterns: index blob %s is not a JSON list: %w", name, err)
		}
	}
	return ids, *resp.ETag, nil
}

func (b *BlobIndex) change(ctx context.Context, op, value string, f func([]string) ([]string, bool)) error {
	name, err := b.name(value)
	if err != nil {
		return &table.InputError{Op: op, Field: "value", Rule: err}
	}
	_, err = table.RetryOnConflict(ctx, &b.retry, func(int) error {
		ids, etag, err := b.read(ctx, name)
		if err != nil {
			return err
		}
		next, changed := f(ids)
		if !changed {
			return nil
		}
		data, _ := json.Marshal(next)
		cond := &blob.ModifiedAccessConditions{IfMatch: &etag}
		if etag == "" {
			cond = &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}
		}
		_, err = b.blobs.UploadBuffer(ctx, b.container, name, data, &azblob.UploadBufferOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: cond}})
		err = redact.Error(err) // a transport error names the URL, SAS token included
		var re *azcore.ResponseError
		if errors.As(err, &re) && (re.StatusCode == http.StatusPreconditionFailed || re.StatusCode == http.StatusConflict) {
			// 412 (changed since read) or 409 (created since): a lost race,
			// which RetryOnConflict retries.
			return &lostRaceError{Op: op, Err: err}
		}
		return err
	})
	return err
}

// Add puts id in value's list.
func (b *BlobIndex) Add(ctx context.Context, value, id string, options *IDListAddOptions) error {
	return b.change(ctx, "BlobIndex.Add", value, func(ids []string) ([]string, bool) {
		if slices.Contains(ids, id) {
			return ids, false
		}
		return append(ids, id), true
	})
}

// Remove takes id out of value's list.
func (b *BlobIndex) Remove(ctx context.Context, value, id string, options *IDListRemoveOptions) error {
	return b.change(ctx, "BlobIndex.Remove", value, func(ids []string) ([]string, bool) {
		i := slices.Index(ids, id)
		if i < 0 {
			return ids, false
		}
		return slices.Delete(ids, i, i+1), true
	})
}

// IDs returns value's list: one request.
func (b *BlobIndex) IDs(ctx context.Context, value string, options *IDListIDsOptions) ([]string, error) {
	name, err := b.name(value)
	if err != nil {
		return nil, &table.InputError{Op: "BlobIndex.IDs", Field: "value", Rule: err}
	}
	ids, _, err := b.read(ctx, name)
	return ids, err
}

// ListIndexMessageType is the message type of EventualIndexEntities updates.
//
// Indexes that share a worker need distinct Names (see MessageType).
const ListIndexMessageType = "tablekit.listindex.v1"

type listMessage struct {
	PK  string `json:"pk"`
	RK  string `json:"rk"`
	Old string `json:"old,omitempty"` // the value before the change, if it had one
}

// EventualIndexEntities keeps an IDList (index entities elsewhere, or
// blobs) eventually consistent with a table of entities: Notify enqueues
// keys and the value the entity had; Handle reads the entity and makes the
// lists match it (its ID in its current value's list, out of the old one).
// The window of inconsistency is the queue's latency; after the queue
// drains, every list holds exactly the entities with that value.
type EventualIndexEntities[T any] struct {
	tbl     *table.Table[T]
	list    IDList
	value   func(*T) string
	sender  *consistency.Sender
	delay   time.Duration
	msgType string
	badName error // a Name that makes no message type, refused by Write
}

// EventualIndexEntitiesOptions configure NewEventualIndexEntities. nil
// means the defaults.
type EventualIndexEntitiesOptions struct {
	// PublishDelay hides a change's message until Write has run the write
	// (Write then shows it at once); after a crash in between, or when the
	// SDK retried the enqueue after a lost response, a message appears
	// when the delay ends. Default: PublishDelay (30 s).
	PublishDelay time.Duration
	// Name names the index in its message type
	// ("tablekit.listindex.<Name>.v1", see MessageType), so several indexes
	// can share one queue and one worker; letters, digits, "_", "-" and
	// ".". An invalid Name makes Write fail with ErrBadDefinition before
	// any request. Default: "", and the type is ListIndexMessageType.
	Name string
}

// NewEventualIndexEntities indexes the entities of tbl by value into list.
func NewEventualIndexEntities[T any](tbl *table.Table[T], value func(*T) string, list IDList, sender *consistency.Sender, opts *EventualIndexEntitiesOptions) *EventualIndexEntities[T] {
	e := &EventualIndexEntities[T]{tbl: tbl, list: list, value: value, sender: sender, delay: PublishDelay}
	var name string
	if opts != nil {
		if opts.PublishDelay > 0 {
			e.delay = opts.PublishDelay
		}
		name = opts.Name
	}
	e.msgType, e.badName = messageType("tablekit.listindex", name)
	return e
}

// MessageType is the type of this index's messages: register Handle under
// it (Worker.Handle(e.MessageType(), e.Handle)).
func (e *EventualIndexEntities[T]) MessageType() string { return e.msgType }

// ID names an entity in the lists: the tuple of its keys.
func ID(partitionKey, rowKey string) string { return ownerRef(partitionKey, rowKey) }

// PublishDelay is the default time a change's message stays hidden if the
// process dies between writing the entity and showing the message.
const PublishDelay = 30 * time.Second

// Write runs write (the change of one entity: add, update or delete) with
// its message sent around it, crash-safe (consistency.Sender.SendAround):
// old is the value the entity had before, "" if none. Three requests
// besides the write's.
func (e *EventualIndexEntities[T]) Write(ctx context.Context, partitionKey, rowKey, old string, write func() error, options *EventualIndexEntitiesWriteOptions) error {
	if e.badName != nil {
		return e.badName
	}
	// The keys are checked before the message goes out: a key the table
	// refuses would otherwise leave a message behind for a write that
	// never happened.
	if err := keys.ValidatePartitionKey(partitionKey); err != nil {
		return &table.InputError{Op: "EventualIndexEntities.Write", Field: "PartitionKey", Rule: err}
	}
	if err := keys.ValidateRowKey(rowKey); err != nil {
		return &table.InputError{Op: "EventualIndexEntities.Write", Field: "RowKey", Rule: err}
	}
	return e.sender.SendAround(ctx, e.msgType, ID(partitionKey, rowKey), listMessage{PK: partitionKey, RK: rowKey, Old: old}, e.delay, write, nil)
}

// Handle is the consistency.Handler for MessageType. A message of another
// type (another index's) is refused as permanent, never applied here.
func (e *EventualIndexEntities[T]) Handle(ctx context.Context, m *consistency.Message) error {
	if m.Type != e.msgType {
		return consistency.Permanent(fmt.Errorf("%w: EventualIndexEntities.Handle: a %s message reached the handler of %s", ErrBadDefinition, m.Type, e.msgType))
	}
	var msg listMessage
	if err := m.Decode(&msg); err != nil {
		return err
	}
	id := ID(msg.PK, msg.RK)
	v, err := e.tbl.Get(ctx, msg.PK, msg.RK, nil)
	current := ""
	switch {
	case table.IsNotFound(err):
	case err != nil:
		return err
	default:
		current = e.value(v)
	}
	if current != "" {
		if err := e.list.Add(ctx, current, id, nil); err != nil {
			return err
		}
	}
	if msg.Old != "" && msg.Old != current {
		return e.list.Remove(ctx, msg.Old, id, nil)
	}
	return nil
}

// lists returns every value's list of the partition: one query per page.
// EventualIndexEntities.VerifyAll uses it to find lists of values no
// entity has any more.
func (r *RemoteIndexEntities) lists(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	for e, err := range r.x.raw.Query(ctx, &table.QueryOptions{Filter: table.RowPrefix(r.partition, r.x.prefix)}) {
		if err != nil {
			return nil, err
		}
		part, err := decodePart(e)
		if err != nil {
			return nil, err
		}
		v, _ := e.Get("Value")
		value, _ := v.AsString()
		out[value] = append(out[value], part.ids...)
	}
	return out, nil
}

// VerifyAll reads every entity of the table and the lists, and reports
// each entity missing from its value's list (Missing), each listed ID
// whose entity is gone or has another value (Orphans) and each ID listed
// twice (Stale); IndexIssue.Primary is the ID and Copy the value. Lists of
// values that no entity has are found when the list can enumerate its
// values (RemoteIndexEntities); a BlobIndex, whose port cannot list blobs,
// is checked for the values the entities have. progress, when set, is
// called with the entities read so far.
func (e *EventualIndexEntities[T]) VerifyAll(ctx context.Context, progress func(read int), options *EventualIndexEntitiesVerifyAllOptions) (*IndexReport, error) {
	r := &IndexReport{}
	want := map[string][]string{}
	for v, err := range e.tbl.Query(ctx, nil) {
		if err != nil {
			return nil, err
		}
		r.Primaries++
		if progress != nil && r.Primaries%100 == 0 {
			progress(r.Primaries)
		}
		if value := e.value(v); value != "" {
			m := e.tbl.Meta(v)
			want[value] = append(want[value], ID(m.PartitionKey, m.RowKey))
		}
	}
	if progress != nil {
		progress(r.Primaries)
	}
	var have map[string][]string
	if l, ok := e.list.(interface {
		lists(context.Context) (map[string][]string, error)
	}); ok {
		var err error
		if have, err = l.lists(ctx); err != nil {
			return nil, err
		}
	} else {
		have = map[string][]string{}
		for value := range want {
			ids, err := e.list.IDs(ctx, value, nil)
			if err != nil {
				return nil, err
			}
			have[value] = ids
		}
	}
	for _, value := range slices.Sorted(maps.Keys(have)) {
		wanted := map[string]bool{}
		for _, id := range want[value] {
			wanted[id] = true
		}
		listed := map[string]bool{}
		for _, id := range have[value] {
			r.Copies++
			issue := IndexIssue{Index: e.msgType, Primary: id, Copy: value}
			switch {
			case listed[id]:
				r.Stale = append(r.Stale, issue)
			case !wanted[id]:
				r.Orphans = append(r.Orphans, issue)
			}
			listed[id] = true
		}
	}
	for _, value := range slices.Sorted(maps.Keys(want)) {
		for _, id := range want[value] {
			if !slices.Contains(have[value], id) {
				r.Missing = append(r.Missing, IndexIssue{Index: e.msgType, Primary: id, Copy: value})
			}
		}
	}
	return r, nil
}

// RepairAll fixes what VerifyAll found, one list change at a time (each
// guarded by its list's ETag): a missing ID is added; an orphan is removed
// after a read of its entity confirms it still lacks the value (a change
// since VerifyAll is left to the queue); a duplicate is removed once.
// progress, when set, is called per issue fixed.
func (e *EventualIndexEntities[T]) RepairAll(ctx context.Context, r *IndexReport, progress func(done, total int), options *EventualIndexEntitiesRepairAllOptions) error {
	total := len(r.Missing) + len(r.Orphans) + len(r.Stale)
	done := 0
	step := func() {
		done++
		if progress != nil {
			progress(done, total)
		}
	}
	for _, is := range r.Missing {
		if err := e.list.Add(ctx, is.Copy, is.Primary, nil); err != nil {
			return err
		}
		step()
	}
	for _, is := range r.Orphans {
		if pk, rk, ok := ownerKeys(is.Primary); ok {
			v, err := e.tbl.Get(ctx, pk, rk, nil)
			if err != nil && !table.IsNotFound(err) {
				return err
			}
			if err == nil && e.value(v) == is.Copy {
				step() // it has the value again: not an orphan any more
				continue
			}
		}
		if err := e.list.Remove(ctx, is.Copy, is.Primary, nil); err != nil {
			return err
		}
		step()
	}
	for _, is := range r.Stale {
		if err := e.list.Remove(ctx, is.Copy, is.Primary, nil); err != nil {
			return err
		}
		step()
	}
	return nil
}

// EventualIndexEntitiesWriteOptions configure EventualIndexEntities.Write. There are none yet; pass nil.
type EventualIndexEntitiesWriteOptions struct{}

// EventualIndexEntitiesVerifyAllOptions configure EventualIndexEntities.VerifyAll. There are none yet; pass nil.
type EventualIndexEntitiesVerifyAllOptions struct{}

// EventualIndexEntitiesRepairAllOptions configure EventualIndexEntities.RepairAll. There are none yet; pass nil.
type EventualIndexEntitiesRepairAllOptions struct{}
