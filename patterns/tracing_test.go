package patterns

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/trace"
	"github.com/tablekit/tablekit/table"
)

type traced struct {
	table.Meta
	Email string
	Photo []byte
}

// checkSpan finds the span of one pattern operation among spans[from:] and
// checks that it is a root, ended, carries the table, partition, operation
// count and outcome, has the SDK's HTTP spans as its descendants, and
// records an error status exactly when the operation failed.
func checkSpan(t *testing.T, rec *trace.Recorder, from int, name, partition string, failed bool) {
	t.Helper()
	spans := rec.Spans()
	at := -1
	for i := from; i < len(spans); i++ {
		if spans[i].Name == name {
			at = i
			break
		}
	}
	if at < 0 {
		t.Errorf("%s: no span among %d new ones", name, len(spans)-from)
		return
	}
	s := spans[at]
	wantOutcome, wantStatus := "ok", tracing.SpanStatusUnset
	if failed {
		wantOutcome, wantStatus = "error", tracing.SpanStatusError
	}
	if s.Parent != -1 || !s.Ended || s.Attributes[trace.AttrOutcome] != wantOutcome || s.Status != wantStatus {
		t.Errorf("%s: span %+v: want a root, ended, outcome %s, status %v", name, s, wantOutcome, wantStatus)
	}
	if s.Attributes[trace.AttrTable] != "Traced" || s.Attributes[trace.AttrOperations] == nil {
		t.Errorf("%s: attributes %v: want table Traced and an operation count", name, s.Attributes)
	}
	if partition != "" && s.Attributes[trace.AttrPartition] != partition {
		t.Errorf("%s: partition attribute %v, want %s", name, s.Attributes[trace.AttrPartition], partition)
	}
	// Every span opened after it until the next root is its descendant: the
	// SDK's spans of this operation, and at least one of them.
	children := 0
	for i := at + 1; i < len(spans) && spans[i].Parent != -1; i++ {
		if spans[i].Parent < at {
			t.Errorf("%s: span %q is not under it (parent %d)", name, spans[i].Name, spans[i].Parent)
		}
		children++
	}
	if children == 0 {
		t.Errorf("%s: no SDK span under it", name)
	}
}

// TestPatternOperationsOpenOneSpanEach gives one recorder to the clients and
// to the patterns, runs each traced operation once, and finds its span
// around the SDK's HTTP spans; a failing operation records an error status.
func TestPatternOperationsOpenOneSpanEach(t *testing.T) {
	var rec trace.Recorder
	ctx := t.Context()
	tables := fake.NewTableService(nil)
	copts := &aztables.ClientOptions{}
	copts.TracingProvider = rec.Provider()
	client := tables.NewClient("Traced", copts)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	bopts := &azblob.ClientOptions{}
	bopts.TracingProvider = rec.Provider()
	blobs := fake.NewBlobService(nil).NewClient(bopts)
	if _, err := blobs.CreateContainer(ctx, "traced", nil); err != nil {
		t.Fatal(err)
	}
	tp := rec.Provider()

	wide := NewWideEntity(tableOf(table.New[table.Entity](client, &table.Options{TracingProvider: tp, Name: "Traced"})))
	from := len(rec.Spans())
	err := wide.Put(ctx, &Wide{PartitionKey: "Stats", RowKey: "2026", Properties: map[string]any{"D001": int32(1)}}, nil)
	checkSpan(t, &rec, from, "WideEntity.Put", "Stats", err != nil)

	le, err := NewLargeEntity[traced](tableOf(table.New[traced](client, &table.Options{TracingProvider: tp, Name: "Traced"})), blobs, "traced", []string{"Photo"}, 16, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &traced{Meta: table.Meta{PartitionKey: "Photos", RowKey: "p1"}, Photo: make([]byte, 64)}
	from = len(rec.Spans())
	err = le.Put(ctx, p, nil)
	checkSpan(t, &rec, from, "LargeEntity.Put", "Photos", err != nil)
	from = len(rec.Spans())
	err = le.Delete(ctx, "Photos", "p1", nil)
	checkSpan(t, &rec, from, "LargeEntity.Delete", "Photos", err != nil)

	// A model's method is one span named for it, whichever parts of the
	// model it runs; a failing one records the error.
	m, err := OpenModel(ctx, tableOf(table.New[traced](client, &table.Options{TracingProvider: tp, Name: "Traced"})), &ModelOptions[traced]{
		Name: "traced", Primary: "m_", Copies: []IndexDef[traced]{{Name: "email", Prefix: "e_", Unique: true, Value: func(v *traced) string { return v.Email }}}})
	if err != nil {
		t.Fatal(err)
	}
	from = len(rec.Spans())
	err = m.Add(ctx, &traced{Meta: table.Meta{PartitionKey: "People", RowKey: "m_1"}, Email: "ann@contoso.com"}, nil)
	checkSpan(t, &rec, from, "Model.Add", "People", err != nil)
	from = len(rec.Spans())
	err = m.Delete(ctx, "People", "m_2", nil)
	checkSpan(t, &rec, from, "Model.Delete", "People", err != nil)
	if err == nil {
		t.Fatal("Model.Delete of a missing entity: no error")
	}
	from = len(rec.Spans())
	_, err = m.Lookup(ctx, "email", "People", "ann@contoso.com", nil)
	checkSpan(t, &rec, from, "Model.Lookup", "People", err != nil)
}

// TestNoProviderNoSpans: a pattern without a TracingProvider opens no span
// of its own; only the SDK's spans reach the client's recorder.
func TestNoProviderNoSpans(t *testing.T) {
	var rec trace.Recorder
	copts := &aztables.ClientOptions{}
	copts.TracingProvider = rec.Provider()
	client := fake.NewTableService(nil).NewClient("Traced", copts)
	if _, err := client.CreateTable(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	wide := NewWideEntity(tableOf(table.New[table.Entity](client, nil)))
	if err := wide.Put(t.Context(), &Wide{PartitionKey: "Stats", RowKey: "2026", Properties: map[string]any{"D001": int32(1)}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, s := range rec.Spans() {
		if s.Name == "WideEntity.Put" {
			t.Fatalf("a span %+v without a TracingProvider", s)
		}
	}
}
