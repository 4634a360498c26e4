package patterns

import (
	"context"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/table"
)

// interMoveSource is the consistency.Source of an InterPartitionIndex's
// primaries: deleting one also has its copies removed.
type interMoveSource[T any] struct{ x *InterPartitionIndex[T] }

// MoveSource is the primaries' table as a consistency.Source for
// consistency.NewMover whose DeleteValue is the index's Delete: the moved
// entity leaves its source table with a message that removes its copies
// (handled by the index's worker, like any Delete), guarded by the ETag
// the Mover read, so a changed entity is not deleted and keeps its copies.
// A Mover over the plain table instead deletes the primary alone and
// leaves its copies orphaned (Verify reports them, Repair removes
// them).
func (x *InterPartitionIndex[T]) MoveSource() consistency.Source[T] {
	return interMoveSource[T]{x}
}

func (s interMoveSource[T]) Get(ctx context.Context, pk, rk string, o *table.ReadOptions) (*T, error) {
	return s.x.tbl.Get(ctx, pk, rk, o)
}

func (s interMoveSource[T]) Meta(v *T) *table.Meta { return s.x.tbl.Meta(v) }

func (s interMoveSource[T]) DeleteValue(ctx context.Context, v *T, _ *table.WriteOptions) error {
	// A redelivered move finds the source already gone: done, not failed.
	return s.x.Delete(ctx, v, &DeleteOptions[T]{IfExists: true})
}

// intraMoveSource is the consistency.Source of an IntraPartitionIndex's
// primaries: deleting one removes its copies in the same transaction.
type intraMoveSource[T any] struct{ x *IntraPartitionIndex[T] }

// MoveSource is the primaries' table as a consistency.Source for
// consistency.NewMover whose DeleteValue is the index's Delete: the moved
// entity and its copies leave in one transaction, guarded by the ETag the
// Mover read. A Mover over the plain table instead deletes the primary
// alone and leaves its copies orphaned (Verify reports them, Repair removes
// them).
func (x *IntraPartitionIndex[T]) MoveSource() consistency.Source[T] {
	return intraMoveSource[T]{x}
}

func (s intraMoveSource[T]) Get(ctx context.Context, pk, rk string, o *table.ReadOptions) (*T, error) {
	return s.x.tbl.Get(ctx, pk, rk, o)
}

func (s intraMoveSource[T]) Meta(v *T) *table.Meta { return s.x.tbl.Meta(v) }

func (s intraMoveSource[T]) DeleteValue(ctx context.Context, v *T, _ *table.WriteOptions) error {
	if v == nil {
		return &table.InputError{Op: opIntraPartitionIndexMoveSourceDeleteValue, Rule: table.ErrNilValue}
	}
	m := s.x.tbl.Meta(v)
	return s.x.Delete(ctx, m.PartitionKey, m.RowKey, &DeleteOptions[T]{Current: v})
}
