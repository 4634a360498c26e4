package trace_test

import (
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/trace"
)

// A tablekit span wraps the SDK's HTTP spans when the user's provider is
// given to both: the client's options and tablekit's.
func TestSpanWrapsTheSDKsHTTPSpans(t *testing.T) {
	var rec trace.Recorder
	opts := &aztables.ClientOptions{}
	opts.TracingProvider = rec.Provider()
	client := fake.NewTableService(nil).NewClient("Employees", opts)
	ctx := t.Context()
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	before := len(rec.Spans())

	tr := trace.New(rec.Provider())
	ctx, end := tr.Start(ctx, "Pattern.Op", trace.Attr(trace.AttrTable, "Employees"))
	_, err := client.GetEntity(ctx, "Sales", "000123", nil)
	end(err)

	spans := rec.Spans()[before:]
	if len(spans) < 2 || spans[0].Name != "Pattern.Op" || spans[0].Parent != -1 {
		t.Fatalf("spans %+v: want Pattern.Op first, as a root", spans)
	}
	root := before
	for _, s := range spans[1:] {
		if s.Parent < root {
			t.Errorf("span %q (kind %v) is not under Pattern.Op: parent %d", s.Name, s.Kind, s.Parent)
		}
		t.Logf("child span %q kind %v parent %d", s.Name, s.Kind, s.Parent)
	}
	p := spans[0]
	if !p.Ended || p.Status != tracing.SpanStatusError || p.Attributes[trace.AttrOutcome] != "error" || p.Attributes[trace.AttrTable] != "Employees" {
		t.Errorf("Pattern.Op span %+v: want ended, error status (the entity is missing), outcome and table attributes", p)
	}
}

func TestZeroTracerRecordsNothing(t *testing.T) {
	var tr trace.Tracer
	ctx, end := tr.Start(t.Context(), "X.Y")
	end(errors.New("boom"))
	if ctx != t.Context() || tr.Enabled() {
		t.Error("the zero Tracer changed the context or claims to be enabled")
	}
}
