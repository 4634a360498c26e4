package eventstream

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit/internal/trace"
)

// tracer opens the span of an append (trace.OpTracer), named as before
// the package moved out of patterns ("EventStream.Append", so existing
// dashboards keep matching), with the table, the stream and the event
// count as attributes.
type tracer struct{ trace.OpTracer }

// newTracer returns the tracer over p; table names the table in the spans
// (aztables does not expose a client's table name, so the options carry it).
func newTracer(p tracing.Provider, table string) tracer {
	return tracer{trace.NewOpTracer(p, table)}
}

// start opens the span of one operation on stream, covering ops events.
// The returned end records the outcome.
func (t tracer) start(ctx context.Context, name, stream string, ops int) (context.Context, func(error)) {
	return t.Start(ctx, name, stream, ops)
}

// streamOf is head's stream, or "" for a nil head.
func streamOf(head *Head) string {
	if head == nil {
		return ""
	}
	return head.stream
}
