package table_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/internal/trace"
	"github.com/tablekit/tablekit/table"
)

type traced struct {
	table.Meta
	Name string
}

// tracedTable is a Table over a fake client of table "Staff" whose SDK
// spans go to rec, with rec given to the Table too when withProvider.
func tracedTable(t *testing.T, rec *trace.Recorder, withProvider bool) *table.Table[traced] {
	t.Helper()
	opts := &aztables.ClientOptions{}
	opts.TracingProvider = rec.Provider()
	client := fake.NewTableService(nil).NewClient("Staff", opts)
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	var o *table.Options
	if withProvider {
		o = &table.Options{TracingProvider: rec.Provider()}
	}
	tb, err := table.New[traced](client, o)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// rootSpan finds the one span named name among spans[from:], checks that it
// is a root, ended, that every later span (the SDK's spans of its requests)
// descends from it, and that there is at least one, and returns it.
func rootSpan(t *testing.T, spans []trace.Span, from int, name string) trace.Span {
	t.Helper()
	root := -1
	for i := from; i < len(spans); i++ {
		if spans[i].Name == name {
			if root >= 0 {
				t.Fatalf("two %s spans: %+v", name, spans[from:])
			}
			root = i
		}
	}
	if root < 0 {
		t.Fatalf("no %s span among %+v", name, spans[from:])
	}
	if spans[root].Parent != -1 || !spans[root].Ended {
		t.Errorf("%s: parent %d, ended %v; want a root, ended", name, spans[root].Parent, spans[root].Ended)
	}
	children := 0
	for i := root + 1; i < len(spans); i++ {
		p := spans[i].Parent
		for p > root {
			p = spans[p].Parent
		}
		if p != root {
			t.Errorf("span %d %q is not under %s", i, spans[i].Name, name)
		}
		children++
	}
	if children == 0 {
		t.Errorf("%s has no child spans: the SDK's HTTP spans are missing", name)
	}
	return spans[root]
}

func wantAttrs(t *testing.T, s trace.Span, outcome, partition string) {
	t.Helper()
	if s.Attributes[trace.AttrOutcome] != outcome || s.Attributes[trace.AttrTable] != "Staff" ||
		s.Attributes[trace.AttrPartition] != partition || s.Attributes[trace.AttrOperations] != 1 {
		t.Errorf("%s attributes %v: want outcome %s, table Staff, partition %s, 1 operation", s.Name, s.Attributes, outcome, partition)
	}
	if (outcome == "error") != (s.Status == tracing.SpanStatusError) {
		t.Errorf("%s status %v with outcome %s", s.Name, s.Status, outcome)
	}
}

// Each Table operation opens one span of its own, named Table.Op, with the
// SDK's HTTP span of its request as a child, when Options.TracingProvider
// is the provider the client was built with.
func TestTableOperationSpans(t *testing.T) {
	var rec trace.Recorder
	tb := tracedTable(t, &rec, true)
	ctx := t.Context()
	v := &traced{Meta: table.Meta{PartitionKey: "Sales", RowKey: "1"}, Name: "Ann"}

	steps := []struct {
		span, outcome string
		run           func() error
	}{
		{"Table.Add", "ok", func() error { return tb.Add(ctx, v, nil) }},
		{"Table.Get", "ok", func() error { _, err := tb.Get(ctx, "Sales", "1", nil); return err }},
		{"Table.Update", "ok", func() error { return tb.Update(ctx, v, nil) }},
		{"Table.Upsert", "ok", func() error { return tb.Upsert(ctx, v, nil) }},
		{"Table.Stored", "ok", func() error { _, err := tableio.For(tb).Stored(ctx, v); return err }},
		{"Table.DeleteValue", "ok", func() error { return tb.DeleteValue(ctx, v, nil) }},
		{"Table.Get", "error", func() error { _, err := tb.Get(ctx, "Sales", "1", nil); return err }},
		{"Table.Delete", "error", func() error { return tb.Delete(ctx, "Sales", "1", nil) }},
	}
	for _, st := range steps {
		before := len(rec.Spans())
		err := st.run()
		if (err != nil) != (st.outcome == "error") {
			t.Fatalf("%s: err %v, want outcome %s", st.span, err, st.outcome)
		}
		wantAttrs(t, rootSpan(t, rec.Spans(), before, st.span), st.outcome, "Sales")
	}
}

// Modify is one span: its read and its write are folded into it (no
// Table.Get or Table.Update spans of their own) and both HTTP spans are
// its descendants.
func TestModifyIsOneSpanOverItsRequests(t *testing.T) {
	var rec trace.Recorder
	tb := tracedTable(t, &rec, true)
	ctx := t.Context()
	if err := tb.Add(ctx, &traced{Meta: table.Meta{PartitionKey: "Sales", RowKey: "1"}, Name: "Ann"}, nil); err != nil {
		t.Fatal(err)
	}
	before := len(rec.Spans())
	if _, err := tb.Modify(ctx, "Sales", "1", func(v *traced) error { v.Name = "Bea"; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	spans := rec.Spans()
	wantAttrs(t, rootSpan(t, spans, before, "Table.Modify"), "ok", "Sales")
	requests := 0
	for _, s := range spans[before:] {
		if strings.HasPrefix(s.Name, "Table.") && s.Name != "Table.Modify" {
			t.Errorf("nested span %q: Modify's own operations must fold into its span", s.Name)
		}
		if s.Kind == tracing.SpanKindClient {
			requests++
		}
	}
	if requests != 2 {
		t.Errorf("%d HTTP spans under Table.Modify, want 2 (the read and the write)", requests)
	}
}

// Inside a caller's tablekit span (a pattern's), a Table operation opens no
// span of its own: the HTTP span hangs under the caller's.
func TestTableSpanFoldsIntoAnOuterOne(t *testing.T) {
	var rec trace.Recorder
	tb := tracedTable(t, &rec, true)
	before := len(rec.Spans())
	ctx, end := trace.New(rec.Provider()).Start(t.Context(), "Pattern.Op")
	_, err := tb.Get(ctx, "Sales", "1", nil)
	end(err)
	if !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Get of a missing entity: %v", err)
	}
	spans := rec.Spans()
	rootSpan(t, spans, before, "Pattern.Op")
	for _, s := range spans[before:] {
		if s.Name == "Table.Get" {
			t.Errorf("a Table.Get span inside Pattern.Op: %+v", s)
		}
	}
}

// Without Options.TracingProvider a Table opens no span of its own; the
// SDK's spans still go to the client's provider.
func TestTableWithoutProviderOpensNoSpan(t *testing.T) {
	var rec trace.Recorder
	tb := tracedTable(t, &rec, false)
	before := len(rec.Spans())
	if err := tb.Add(t.Context(), &traced{Meta: table.Meta{PartitionKey: "Sales", RowKey: "1"}}, nil); err != nil {
		t.Fatal(err)
	}
	spans := rec.Spans()[before:]
	if len(spans) == 0 {
		t.Fatal("no SDK span recorded: the test's client is not traced")
	}
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "Table.") {
			t.Errorf("span %+v opened without a provider", s)
		}
	}
}

// BenchmarkGetSpan prices a Get's span: without a provider (the default),
// with a provider that records nothing (tracing.Provider{}), and with the
// in-memory recorder, on the fake service.
func BenchmarkGetSpan(b *testing.B) {
	var rec trace.Recorder
	for _, c := range []struct {
		name string
		p    *tracing.Provider
	}{{"none", nil}, {"zero", &tracing.Provider{}}, {"recorder", nil}} {
		b.Run(c.name, func(b *testing.B) {
			client := fake.NewTableService(nil).NewClient("Staff", nil)
			if _, err := client.CreateTable(b.Context(), nil); err != nil {
				b.Fatal(err)
			}
			var o *table.Options
			switch {
			case c.p != nil:
				o = &table.Options{TracingProvider: *c.p}
			case c.name == "recorder":
				o = &table.Options{TracingProvider: rec.Provider()}
			}
			tb, err := table.New[traced](client, o)
			if err != nil {
				b.Fatal(err)
			}
			if err := tb.Add(b.Context(), &traced{Meta: table.Meta{PartitionKey: "Sales", RowKey: "1"}, Name: "Ann"}, nil); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tb.Get(b.Context(), "Sales", "1", nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestQueryOpensASpanAPage: Query opens one Table.Query span per page
// (request), each over its HTTP span, and QueryPage one Table.QueryPage
// span; a span across the caller's loop would time the caller too.
func TestQueryOpensASpanAPage(t *testing.T) {
	rec := &trace.Recorder{}
	tb := tracedTable(t, rec, true)
	ctx := t.Context()
	for i := range 6 {
		v := &traced{Meta: table.Meta{PartitionKey: fmt.Sprintf("P%d", i%3), RowKey: fmt.Sprint(i)}, Name: "n"}
		if err := tb.Add(ctx, v, nil); err != nil {
			t.Fatal(err)
		}
	}
	// count checks every span named name among spans[from:]: a root, ended, with
	// exactly one HTTP span under it (its page's request).
	count := func(spans []trace.Span, from int, name string) (n int) {
		for i := from; i < len(spans); i++ {
			s := spans[i]
			if s.Name != name {
				continue
			}
			n++
			if s.Parent != -1 || !s.Ended {
				t.Errorf("%s span %d: parent %d, ended %v; want a root, ended", name, i, s.Parent, s.Ended)
			}
			under := 0
			for _, c := range spans[i+1:] {
				if c.Parent == i {
					under++
				}
			}
			if under != 1 {
				t.Errorf("%s span %d has %d spans under it, want its one request", name, i, under)
			}
		}
		return n
	}
	before := len(rec.Spans())
	all, err := seqs.Collect(tb.Query(ctx, nil))
	if err != nil || len(all) != 6 {
		t.Fatalf("query: %d, %v", len(all), err)
	}
	spans := rec.Spans()
	http := 0
	for _, s := range spans[before:] {
		switch {
		case strings.HasPrefix(s.Name, "HTTP"):
			http++
		case s.Name != "Table.Query":
			t.Errorf("unexpected span %q", s.Name)
		}
	}
	// The fake ends a page at each of the three partitions (and may add
	// empty pages): at least three pages, a span each.
	if pages := count(spans, before, "Table.Query"); pages < 3 || pages != http {
		t.Errorf("%d Table.Query spans over %d requests; want one a page, at least 3", pages, http)
	}
	before = len(rec.Spans())
	if _, err := tb.QueryPage(ctx, "", nil); err != nil {
		t.Fatal(err)
	}
	if n := count(rec.Spans(), before, "Table.QueryPage"); n != 1 {
		t.Errorf("%d Table.QueryPage spans, want 1", n)
	}
}
