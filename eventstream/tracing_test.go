package eventstream

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/trace"
)

type tracedEvent struct {
	Event
	What string
}

// TestAppendOpensOneSpan gives one recorder to the client and to the store:
// an append opens one root span, "EventStream.Append" (the name it had in
// patterns), with the table, the stream and the event count, around the
// SDK's HTTP spans; a refused append records an error status.
func TestAppendOpensOneSpan(t *testing.T) {
	var rec trace.Recorder
	ctx := t.Context()
	copts := &aztables.ClientOptions{}
	copts.TracingProvider = rec.Provider()
	client := fake.NewTableService(nil).NewClient("Traced", copts)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	s, err := New[tracedEvent](client, &Options{TracingProvider: rec.Provider(), TableName: "Traced"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		head   *Head
		failed bool
	}{
		{NewHead("order-1"), false},
		{NewHead("order-1"), true}, // the stream is at version 2 now: ErrConflict
	} {
		from := len(rec.Spans())
		_, err := s.Append(ctx, c.head, []*tracedEvent{{What: "placed"}, {What: "paid"}}, nil)
		if (err != nil) != c.failed {
			t.Fatalf("append: %v, want failed %v", err, c.failed)
		}
		spans := rec.Spans()
		if len(spans) <= from+1 {
			t.Fatalf("%d new spans; want the append's and the SDK's under it", len(spans)-from)
		}
		sp := spans[from]
		outcome, status := "ok", tracing.SpanStatusUnset
		if c.failed {
			outcome, status = "error", tracing.SpanStatusError
		}
		if sp.Name != "EventStream.Append" || sp.Parent != -1 || !sp.Ended || sp.Attributes[trace.AttrOutcome] != outcome || sp.Status != status ||
			sp.Attributes[trace.AttrTable] != "Traced" || sp.Attributes[trace.AttrPartition] != "order-1" || sp.Attributes[trace.AttrOperations] != 2 {
			t.Errorf("span %+v: want root EventStream.Append, ended, outcome %s, table Traced, partition order-1, 2 operations", sp, outcome)
		}
		for i := from + 1; i < len(spans); i++ {
			if spans[i].Parent < from {
				t.Errorf("SDK span %q is not under the append (parent %d)", spans[i].Name, spans[i].Parent)
			}
		}
	}
}
