package eventstream

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit/internal/trace"
)

// tracer opens the span of an append, named as before the package moved
// out of patterns ("EventStream.Append", so existing dashboards keep
// matching), with the table, the stream and the event count as
// attributes, so that the SDK's HTTP spans of one append sit under one
// parent. The zero tracer opens none and costs one branch.
type tracer struct {
	tr    trace.Tracer
	table string
}

// newTracer returns the tracer over p; table names the table in the spans
// (aztables does not expose a client's table name, so the options carry it).
func newTracer(p tracing.Provider, table string) tracer {
	return tracer{tr: trace.New(p), table: table}
}

// start opens the span of one operation on stream, covering ops events.
// The returned end records the outcome.
func (t tracer) start(ctx context.Context, name, stream string, ops int) (context.Context, func(error)) {
	if !t.tr.Enabled() {
		return ctx, func(error) {}
	}
	attrs := []tracing.Attribute{trace.Attr(trace.AttrOperations, ops)}
	if t.table != "" {
		attrs = append(attrs, trace.Attr(trace.AttrTable, t.table))
	}
	if stream != "" {
		attrs = append(attrs, trace.Attr(trace.AttrPartition, stream))
	}
	return t.tr.Start(ctx, name, attrs...)
}

// streamOf is head's stream, or "" for a nil head.
func streamOf(head *Head) string {
	if head == nil {
		return ""
	}
	return head.stream
}
