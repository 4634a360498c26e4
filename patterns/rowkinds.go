package patterns

import (
	"fmt"

	"github.com/tablekit/tablekit/internal/rowkind"
	"github.com/tablekit/tablekit/table"
)

// The patterns that keep their rows as Entities (DataSeries, WideEntity,
// LargeEntity) mark each row they write with their kind, as a pattern's
// typed handle marks its rows (LogTail, Sharded), so that an entity
// model's handle and every other typed handle of the table leave the row
// out. They read a row at the keys they are given, so a row there without
// a mark is theirs, written before the mark (it gets the mark when
// rewritten); a row marked with another kind is refused
// (table.ErrOtherRowKind).

// markKind marks e, a row the pattern writes, as a row of kind k.
func markKind(e *table.Entity, k rowkind.Kind) { e.Set(rowkind.Property, table.ValueOf(string(k))) }

// ofKind reports whether e, a row read through the raw view at the keys
// of a row of kind k, is one: it is marked with k, or with no kind (a
// row written before the mark) and names no index owner.
func ofKind(e *table.Entity, k rowkind.Kind) bool {
	if _, ok := e.Get(indexOfProperty); ok {
		return false
	}
	v, ok := e.Get(rowkind.Property)
	s, _ := v.AsString()
	return !ok || s == string(k)
}

// otherKind is the refusal of a row of another kind than the pattern's,
// at its keys.
func otherKind(op string, e *table.Entity, k rowkind.Kind) error {
	return &table.InputError{Op: op, Field: "RowKey", Rule: table.ErrOtherRowKind,
		Detail: fmt.Sprintf("(%q, %q) is not a row of kind %q; another pattern or an entity model wrote it", e.PartitionKey, e.RowKey, k)}
}
