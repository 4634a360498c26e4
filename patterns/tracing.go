package patterns

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit/internal/trace"
	"github.com/tablekit/tablekit/table"
)

// tracer opens a pattern's spans (trace.OpTracer): one per operation,
// named Type.Method, with the table, the partition and the operation count.
type tracer struct{ trace.OpTracer }

// newTracer returns the tracer of a pattern over p; table names the table in
// the spans (aztables does not expose a client's table name, so the options
// carry it).
func newTracer(p tracing.Provider, table string) tracer {
	return tracer{trace.NewOpTracer(p, table)}
}

// start opens the span of one operation on partition, covering ops items
// (entities, events or repairs). The returned end records the outcome.
func (t tracer) start(ctx context.Context, name, partition string, ops int) (context.Context, func(error)) {
	return t.Start(ctx, name, partition, ops)
}

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

// problems counts the issues a Repair of r works on; 0 for a nil report.
func (r *IndexReport) problems() int {
	if r == nil {
		return 0
	}
	return len(r.Missing) + len(r.Orphans) + len(r.Stale)
}
