package batch_test

import (
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/trace"
)

// checkSpan finds the one span named name among the spans opened from
// index from on, checks that every later span (the SDK's HTTP spans of its
// requests) is its descendant, and returns it.
func checkSpan(t *testing.T, spans []trace.Span, from int, name string) trace.Span {
	t.Helper()
	root := -1
	for i := from; i < len(spans); i++ {
		if spans[i].Name == name {
			if root >= 0 {
				t.Fatalf("two %s spans: %+v", name, spans)
			}
			root = i
		}
	}
	if root < 0 {
		t.Fatalf("no %s span among %+v", name, spans)
	}
	children := 0
	for i, s := range spans[root+1:] {
		p := s.Parent
		for p > root && p < len(spans) {
			p = spans[p].Parent
		}
		if p != root {
			t.Errorf("span %d %q is not under %s", root+1+i, s.Name, name)
		}
		children++
	}
	if children == 0 {
		t.Errorf("%s has no child spans: the SDK's HTTP spans are missing", name)
	}
	if !spans[root].Ended {
		t.Errorf("%s not ended", name)
	}
	return spans[root]
}

func TestWriterWriteSpan(t *testing.T) {
	deadline(t, writerDeadline)
	var rec trace.Recorder
	opts := &aztables.ClientOptions{}
	opts.TracingProvider = rec.Provider()
	_, c := newFake(t, opts)
	w := batch.NewWriter(c, &batch.WriterOptions{TracingProvider: rec.Provider()})

	before := len(rec.Spans())
	sum, err := w.Write(t.Context(), slices.Values([]batch.Op{batch.Add(ev("a", 1)), batch.Add(ev("a", 2)), batch.Add(ev("b", 1))}), nil)
	if err != nil || sum.Transactions != 2 {
		t.Fatalf("%+v %v", sum, err)
	}
	s := checkSpan(t, rec.Spans(), before, "Writer.Write")
	if s.Status == tracing.SpanStatusError || s.Attributes[trace.AttrOutcome] != "ok" ||
		s.Attributes[trace.AttrOperations] != 3 || s.Attributes["tablekit.transactions"] != 2 || s.Attributes["tablekit.failed"] != 0 {
		t.Errorf("span %+v: want ok, 3 operations, 2 transactions, 0 failed", s)
	}

	// The same Adds again: the service refuses both transactions (409).
	before = len(rec.Spans())
	_, err = w.Write(t.Context(), slices.Values([]batch.Op{batch.Add(ev("a", 1)), batch.Add(ev("b", 1))}), nil)
	if err == nil {
		t.Fatal("second Add of the same entities succeeded")
	}
	s = checkSpan(t, rec.Spans(), before, "Writer.Write")
	if s.Status != tracing.SpanStatusError || s.Attributes[trace.AttrOutcome] != "error" || s.Attributes["tablekit.failed"] != 2 || s.Attributes[trace.AttrOperations] != 0 {
		t.Errorf("span %+v: want error status, outcome error, 2 failed, 0 operations", s)
	}
}

// Without a provider a Write opens no span of tablekit's.
func TestWriterWithoutProviderOpensNoSpan(t *testing.T) {
	deadline(t, writerDeadline)
	var rec trace.Recorder
	opts := &aztables.ClientOptions{}
	opts.TracingProvider = rec.Provider()
	_, c := newFake(t, opts)
	before := len(rec.Spans())
	if _, err := batch.NewWriter(c, nil).Write(t.Context(), slices.Values([]batch.Op{batch.Add(ev("a", 1))}), nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range rec.Spans()[before:] {
		if s.Name == "Writer.Write" {
			t.Errorf("span %+v opened without a provider", s)
		}
	}
}
