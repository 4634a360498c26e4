package patterns

import (
	"github.com/tablekit/tablekit/table"
)

// partitionOf is v's PartitionKey, or "" for a nil v (which the operation
// then refuses inside its span).
func partitionOf[T any](tbl *table.Table[T], v *T) string {
	if v == nil {
		return ""
	}
	return tbl.Meta(v).PartitionKey
}

// widePartition is v's PartitionKey, or "" for a nil v.
func widePartition(v *Wide) string {
	if v == nil {
		return ""
	}
	return v.PartitionKey
}

// problems counts the issues a repair of r works on; 0 for nil.
func (r *verifyRange) problems() int {
	if r == nil {
		return 0
	}
	return len(r.Missing) + len(r.Orphans) + len(r.Stale)
}
