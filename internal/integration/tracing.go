package integration

import (
	"context"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/internal/trace"
	"github.com/tablekit/tablekit/table"
)

// RunTracing checks tablekit's own spans on the backend's real pipeline:
// with one provider given to the SDK's client (aztables.ClientOptions) and
// to tablekit (table.Options, batch.TransactionOptions,
// batch.WriterOptions), each tablekit operation is one root span, named
// Type.Method, whose descendants are the SDK's HTTP spans of its requests,
// with the table, partition, operation count and outcome as attributes.
func RunTracing(t *testing.T, env Env) {
	t.Run("table operations wrap their HTTP spans", func(t *testing.T) { tracingTable(t, env) })
	t.Run("transactions and writes wrap their HTTP spans", func(t *testing.T) { tracingBatch(t, env) })
}

type traceRow struct {
	table.Meta
	Name string
}

// tracedClient creates a fresh table through a service client whose SDK
// spans go to rec, and returns its client and name.
func tracedClient(t *testing.T, env Env, rec *trace.Recorder) (*aztables.Client, string) {
	t.Helper()
	opts := &aztables.ClientOptions{}
	opts.TracingProvider = rec.Provider()
	sc := env.NewServiceClient(t, opts)
	name := testenv.UniqueName("trace")
	if _, err := sc.CreateTable(t.Context(), name, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = sc.DeleteTable(context.Background(), name, nil) })
	return sc.NewClient(name), name
}

// rootOver finds the one span named name among spans[from:] and checks that
// it is an ended root with at least one HTTP (client-kind) span below it and
// every later span below it; it returns the span.
func rootOver(t *testing.T, spans []trace.Span, from int, name string) trace.Span {
	t.Helper()
	root := -1
	for i := from; i < len(spans); i++ {
		if spans[i].Name == name {
			if root >= 0 {
				t.Fatalf("two %s spans", name)
			}
			root = i
		}
	}
	if root < 0 {
		t.Fatalf("no %s span among %d new spans", name, len(spans)-from)
	}
	if spans[root].Parent != -1 || !spans[root].Ended {
		t.Errorf("%s: parent %d, ended %v; want an ended root", name, spans[root].Parent, spans[root].Ended)
	}
	http := 0
	for i := root + 1; i < len(spans); i++ {
		p := spans[i].Parent
		for p > root {
			p = spans[p].Parent
		}
		if p != root {
			t.Errorf("span %q (kind %v) is not under %s", spans[i].Name, spans[i].Kind, name)
		}
		if spans[i].Kind == tracing.SpanKindClient {
			http++
		}
	}
	if http == 0 {
		t.Errorf("%s has no HTTP span below it", name)
	}
	return spans[root]
}

func checkTraceAttrs(t *testing.T, s trace.Span, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if s.Attributes[k] != v {
			t.Errorf("%s: attribute %s = %v, want %v (all: %v)", s.Name, k, s.Attributes[k], v, s.Attributes)
		}
	}
	if (s.Attributes[trace.AttrOutcome] == "error") != (s.Status == tracing.SpanStatusError) {
		t.Errorf("%s: status %v with outcome %v", s.Name, s.Status, s.Attributes[trace.AttrOutcome])
	}
}

func tracingTable(t *testing.T, env Env) {
	var rec trace.Recorder
	client, name := tracedClient(t, env, &rec)
	tb, err := table.New[traceRow](client, &table.Options{TracingProvider: rec.Provider()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	v := &traceRow{Meta: table.Meta{PartitionKey: "p1", RowKey: "r1"}, Name: "a"}
	ok := map[string]any{trace.AttrOutcome: "ok", trace.AttrTable: name, trace.AttrPartition: "p1", trace.AttrOperations: 1}
	failed := map[string]any{trace.AttrOutcome: "error", trace.AttrTable: name, trace.AttrPartition: "p1", trace.AttrOperations: 1}
	for _, st := range []struct {
		span string
		want map[string]any
		run  func() error
	}{
		{"Table.Add", ok, func() error { return tb.Add(ctx, v, nil) }},
		{"Table.Get", ok, func() error { _, err := tb.Get(ctx, "p1", "r1", nil); return err }},
		{"Table.Modify", ok, func() error {
			_, err := tb.Modify(ctx, "p1", "r1", func(r *traceRow) error { r.Name = "b"; return nil }, nil)
			return err
		}},
		{"Table.Delete", ok, func() error { return tb.Delete(ctx, "p1", "r1", nil) }},
		{"Table.Get", failed, func() error { _, err := tb.Get(ctx, "p1", "r1", nil); return err }},
	} {
		before := len(rec.Spans())
		err := st.run()
		if (err != nil) != (st.want[trace.AttrOutcome] == "error") {
			t.Fatalf("%s: %v", st.span, err)
		}
		checkTraceAttrs(t, rootOver(t, rec.Spans(), before, st.span), st.want)
	}
}

func tracingBatch(t *testing.T, env Env) {
	var rec trace.Recorder
	client, _ := tracedClient(t, env, &rec)
	ctx := t.Context()
	before := len(rec.Spans())
	ops := []batch.Op{
		batch.Add(&traceRow{Meta: table.Meta{PartitionKey: "p1", RowKey: "r1"}}),
		batch.Add(&traceRow{Meta: table.Meta{PartitionKey: "p1", RowKey: "r2"}}),
	}
	if _, err := batch.Submit(ctx, client, ops, &batch.TransactionOptions{TracingProvider: rec.Provider()}); err != nil {
		t.Fatal(err)
	}
	checkTraceAttrs(t, rootOver(t, rec.Spans(), before, "Transaction.Submit"),
		map[string]any{trace.AttrOutcome: "ok", trace.AttrPartition: "p1", trace.AttrOperations: 2})

	before = len(rec.Spans())
	w := batch.NewWriter(client, &batch.WriterOptions{TracingProvider: rec.Provider()})
	sum, err := w.Write(ctx, slices.Values([]batch.Op{
		batch.Add(&traceRow{Meta: table.Meta{PartitionKey: "p2", RowKey: "r1"}}),
		batch.Add(&traceRow{Meta: table.Meta{PartitionKey: "p3", RowKey: "r1"}}),
	}),

		nil)
	if err != nil || sum.Transactions != 2 {
		t.Fatalf("%+v %v", sum, err)
	}
	checkTraceAttrs(t, rootOver(t, rec.Spans(), before, "Writer.Write"),
		map[string]any{trace.AttrOutcome: "ok", trace.AttrOperations: 2})
}
