package patterns

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit/internal/trace"
	"github.com/tablekit/tablekit/table"
)

// tracer opens a pattern's spans: one per operation, named Type.Method,
// with the table, the partition and the operation count as attributes, so
// that the SDK's HTTP spans of one pattern call sit under one parent. The
// zero tracer opens none and costs one branch.
type tracer struct {
	tr    trace.Tracer
	table string
}

// newTracer returns the tracer of a pattern over p; table names the table in
// the spans (aztables does not expose a client's table name, so the options
// carry it).
func newTracer(p tracing.Provider, table string) tracer {
	return tracer{tr: trace.New(p), table: table}
}

// start opens the span of one operation on partition, covering ops items
// (entities, events or repairs). The returned end records the outcome.
func (t tracer) start(ctx context.Context, name, partition string, ops int) (context.Context, func(error)) {
	if !t.tr.Enabled() {
		return ctx, func(error) {}
	}
	attrs := []tracing.Attribute{trace.Attr(trace.AttrOperations, ops)}
	if t.table != "" {
		attrs = append(attrs, trace.Attr(trace.AttrTable, t.table))
	}
	if partition != "" {
		attrs = append(attrs, trace.Attr(trace.AttrPartition, partition))
	}
	return t.tr.Start(ctx, name, attrs...)
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
