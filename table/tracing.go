package table

import (
	"context"
)

// span opens the span of one Table operation, "Table."+op, on partitionKey,
// with the table's name and the operation count (1) as attributes; the
// returned end records the outcome. Without a provider (Options.TracingProvider
// unset) it opens nothing and costs one branch. Inside another tablekit
// span (a pattern's, or Modify's) it is folded into that one, as azcore
// folds an SDK call made inside another, so the SDK's HTTP spans hang
// under the outermost operation.
func (t *Table[T]) span(ctx context.Context, op, partitionKey string) (context.Context, func(error)) {
	if !t.tr.Enabled() {
		return ctx, noEnd
	}
	return t.tr.StartOn(ctx, "Table."+op, t.spanTable(), partitionKey, 1)
}

// noEnd is the end of a span not opened.
func noEnd(error) {}

// spanTable names the table in spans: Options.Name, else the table the
// client addresses (an *aztables.Client's), else the name a query
// response showed.
func (t *Table[T]) spanTable() string {
	if t.name != "" {
		return t.name
	}
	if n := clientTableName(t.client); n != "" {
		return n
	}
	return t.tableName()
}

// partitionOf is v's PartitionKey, or "" for a nil v (which the operation
// then refuses inside its span).
func (t *Table[T]) partitionOf(v *T) string {
	if v == nil {
		return ""
	}
	return t.Meta(v).PartitionKey
}
