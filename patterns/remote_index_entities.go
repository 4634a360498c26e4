package patterns

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/idlist"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/table"
)

// IDList is where a value's list of entity IDs lives, for the eventually
// consistent index-entity options: RemoteIndexEntities (option 3, an index
// table) or BlobIndex (option 1, a blob per value).
type idList interface {
	// Add and Remove change one value's list idempotently, retrying lost
	// races on its ETag.
	// A bad input is an *table.InputError of op, the model's method.
	Add(ctx context.Context, op, value, id string) error
	Remove(ctx context.Context, op, value, id string) error
	// IDs returns the list: one request.
	IDs(ctx context.Context, op, value string) ([]string, error)
}

// RemoteIndexEntities keeps value → IDs lists as index entities in another
// partition or table (option 3: the guide's EmployeeDetails for a last
// name across departments): PartitionKey is the partition given, RowKeys
// are as in IndexEntities, and a list outgrowing 1 MiB continues in further
// index entities of the value. Each change of a list is one update guarded
// by its ETag.
type remoteIndexEntities struct {
	client    table.Client
	partition string
	x         *indexEntities[table.Entity]
	retry     table.RetryOptions
}

// newRemoteIndexEntities stores lists in tbl under partition, with RowKeys
// that start with prefix.
func newRemoteIndexEntities(tbl *table.Table[table.Entity], partition, prefix string, opts *indexEntitiesOptions) (*remoteIndexEntities, error) {
	if tbl == nil {
		return nil, fmt.Errorf("%w: a remote list needs its Table", ErrBadDefinition)
	}
	if err := keyrules.ValidatePartitionKey(partition); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDefinition, err)
	}
	// The lists are kept apart from the entities, so only their keys
	// matter: the indexed type is the raw entity.
	x, err := newIndexEntities(tbl, prefix, func(*table.Entity) string { return "" }, opts)
	if err != nil {
		return nil, err
	}
	return &remoteIndexEntities{client: tbl.Client(), partition: partition, x: x, retry: x.retry}, nil
}

func (r *remoteIndexEntities) change(ctx context.Context, name string, op func(parts []indexPart) (*batch.Op, error), value string) error {
	_, err := table.RetryOnConflict(ctx, func(int) error {
		parts, err := r.x.read(ctx, name, r.partition, value)
		if err != nil {
			return err
		}
		o, err := op(parts)
		if err != nil || o == nil {
			return err
		}
		return submitListOps(ctx, r.client, []batch.Op{*o})
	}, &r.retry)
	return err
}

// Add puts id in value's list (no change if it is there).
func (r *remoteIndexEntities) Add(ctx context.Context, op, value, id string) error {
	if err := idlist.CheckID(id); err != nil {
		return &table.InputError{Op: op, Field: "id", Rule: err}
	}
	return r.change(ctx, op, func(parts []indexPart) (*batch.Op, error) {
		if containsID(parts, id) {
			return nil, nil
		}
		o, err := r.x.addTo(r.partition, value, id, parts)
		return &o, err
	}, value)
}

// addIDs puts ids in value's list as many Adds would, in one transaction
// (a read and a write): how the entity model's handler applies a message
// that names many entities of one value.
func (r *remoteIndexEntities) addIDs(ctx context.Context, value string, ids []string) error {
	for _, id := range ids {
		if err := idlist.CheckID(id); err != nil {
			return &table.InputError{Op: opModelProcess, Field: "id", Rule: err}
		}
	}
	_, err := table.RetryOnConflict(ctx, func(int) error {
		parts, err := r.x.read(ctx, opModelProcess, r.partition, value)
		if err != nil {
			return err
		}
		ops, err := r.x.appendIDs(r.partition, value, ids, parts)
		if err != nil || len(ops) == 0 {
			return err
		}
		err = submitListOps(ctx, r.client, ops)
		return err
	}, &r.retry)
	return err
}

// Remove takes id out of value's list (no change if it is not there).
func (r *remoteIndexEntities) Remove(ctx context.Context, op, value, id string) error {
	return r.change(ctx, op, func(parts []indexPart) (*batch.Op, error) {
		return r.x.removeFrom(r.partition, value, id, parts)
	}, value)
}

// IDs returns value's list: one query.
func (r *remoteIndexEntities) IDs(ctx context.Context, op, value string) ([]string, error) {
	return r.x.lookup(ctx, op, r.partition, value)
}

// eachList hands every value's list of the partition to f, one index
// entity (a part of a list) at a time, in value and part order: one query
// per page. EventualIndexEntities' verify uses it to find lists of values
// no entity has any more.
func (r *remoteIndexEntities) eachList(ctx context.Context, f func(value string, ids []string) error) error {
	for e, err := range r.x.raw.Query(ctx, &table.QueryOptions{Filter: table.RowPrefix(r.partition, r.x.prefix)}) {
		if err != nil {
			return err
		}
		part, err := decodePart(e)
		if err != nil {
			return err
		}
		v, _ := e.Get("Value")
		value, _ := v.AsString()
		if err := f(value, part.ids); err != nil {
			return err
		}
	}
	return nil
}

// submitListOps sends a list's operations on the index entities just read
// (those that existed guarded by the ETag read) as the fewest
// transactions. An entity read and gone by the write (404 on its guarded
// update or delete) was removed by another writer, its last ID taken out:
// a lost race, as a changed entity's 412 is, so RetryOnConflict reads
// again instead of ending the change with the service's 404.
func submitListOps(ctx context.Context, client table.Client, ops []batch.Op) error {
	err := submitOps(ctx, client, ops)
	var te *batch.TransactionError
	if errors.As(err, &te) && te.Index >= 0 && table.Is(err, table.ErrNotFound) {
		return lostRace(fmt.Sprintf("index entity (%q, %q) deleted after it was read", te.Op.PartitionKey(), te.Op.RowKey()), err)
	}
	return err
}
