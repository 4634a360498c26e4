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
// out, and they read back only rows of their kind.

// markKind marks e, a row the pattern writes, as a row of kind k.
func markKind(e *table.Entity, k rowkind.Kind) { e.Set(rowkind.Property, table.ValueOf(string(k))) }

// ofKind reports whether e, a row read through the raw view, is of kind k.
func ofKind(e *table.Entity, k rowkind.Kind) bool {
	v, ok := e.Get(rowkind.Property)
	s, _ := v.AsString()
	return ok && s == string(k)
}

// otherKind is the refusal of a row of another kind than the pattern's,
// at its keys.
func otherKind(op string, e *table.Entity, k rowkind.Kind) error {
	return &table.InputError{Op: op, Field: "RowKey", Rule: table.ErrOtherRowKind,
		Detail: fmt.Sprintf("(%q, %q) is not a row of kind %q; another pattern or an entity model wrote it", e.PartitionKey, e.RowKey, k)}
}
