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
