// Package trace opens tablekit's own spans through an azcore tracing
// provider: the one the user gives the SDK's clients (for OpenTelemetry,
// azotel.NewTracingProvider), passed to tablekit in its options. A pattern
// operation then shows as one span (IntraPartitionIndex.Put,
// Writer.Write, Worker.handle, Mover.move) with the SDK's HTTP spans as its
// children. A zero provider traces nothing and costs nothing.
//
// aztables keeps its azcore.Client unexported, so tablekit cannot read the
// tracer from a client it is given: the provider is an option instead.
package trace

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit/internal/redact"
)

// Module is the instrumentation scope tablekit's spans carry.
const Module = "github.com/tablekit/tablekit"

// Attribute keys tablekit sets on its spans.
const (
	AttrTable      = "tablekit.table"
	AttrPartition  = "tablekit.partition"
	AttrOperations = "tablekit.operations"
	AttrOutcome    = "tablekit.outcome"
	AttrQueue      = "tablekit.queue"
	AttrMessage    = "tablekit.message_type"
)

// Tracer opens spans; the zero Tracer opens none.
type Tracer struct{ t tracing.Tracer }

// New returns a Tracer over p.
func New(p tracing.Provider) Tracer { return Tracer{t: p.NewTracer(Module, "")} }

// Enabled reports whether spans are recorded.
func (t Tracer) Enabled() bool { return t.t.Enabled() }

// Start opens a span named name (Type.Method) with attrs. The returned end
// records the outcome ("ok", or "error" with the error as the span's
// status) and closes it. A span opened inside another tablekit span is
// folded into it, as the Azure SDK does for nested SDK calls; HTTP spans
// stay children of the outermost.
func (t Tracer) Start(ctx context.Context, name string, attrs ...tracing.Attribute) (context.Context, func(error)) {
	if !t.t.Enabled() {
		return ctx, func(error) {}
	}
	ctx, end := runtime.StartSpan(ctx, name, t.t, &runtime.StartSpanOptions{Kind: tracing.SpanKindInternal, Attributes: attrs})
	span := t.t.SpanFromContext(ctx)
	return ctx, func(err error) {
		outcome := "ok"
		if err != nil {
			outcome = "error"
		}
		span.SetAttributes(tracing.Attribute{Key: AttrOutcome, Value: outcome})
		// azcore's end prints err into the span's status description:
		// redacted, so no span carries a SAS signature.
		end(redact.Error(err))
	}
}

// Attr is a span attribute. A string value passes through redact.String:
// every attribute tablekit sets is built here, so none carries a secret.
func Attr(key string, value any) tracing.Attribute {
	if s, ok := value.(string); ok {
		value = redact.String(s)
	}
	return tracing.Attribute{Key: key, Value: value}
}

// OpTracer opens the spans of operations on one table: named Type.Method,
// with the table, the partition and the operation count as attributes, so
// that the SDK's HTTP spans of one call sit under one parent. Table,
// batch, the patterns and event streams all open their spans through it,
// so every tablekit span carries the same attributes. The zero OpTracer
// opens none and costs one branch.
type OpTracer struct {
	tr    Tracer
	table string
}

// NewOpTracer returns the tracer of operations on table (its name in the
// spans; "" leaves the attribute out) over p.
func NewOpTracer(p tracing.Provider, table string) OpTracer {
	return OpTracer{tr: New(p), table: table}
}

// Enabled reports whether spans are recorded.
func (t OpTracer) Enabled() bool { return t.tr.Enabled() }

// Start opens the span of one operation on partition ("" leaves it out),
// covering ops items (entities, events, operations or repairs). The
// returned end records the outcome.
func (t OpTracer) Start(ctx context.Context, name, partition string, ops int) (context.Context, func(error)) {
	return t.StartOn(ctx, name, t.table, partition, ops)
}

// StartOn is Start on a table named here rather than at construction, for
// callers that learn the name late (a Table whose name comes from its
// client or its first response).
func (t OpTracer) StartOn(ctx context.Context, name, table, partition string, ops int) (context.Context, func(error)) {
	if !t.tr.Enabled() {
		return ctx, noEnd
	}
	attrs := make([]tracing.Attribute, 1, 3)
	attrs[0] = Attr(AttrOperations, ops)
	if table != "" {
		attrs = append(attrs, Attr(AttrTable, table))
	}
	if partition != "" {
		attrs = append(attrs, Attr(AttrPartition, partition))
	}
	return t.tr.Start(ctx, name, attrs...)
}

// noEnd is the end of a span not opened.
func noEnd(error) {}
