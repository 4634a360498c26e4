package consistency_test

import (
	"encoding/json"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/envelope"
	"github.com/tablekit/tablekit/internal/trace"
	"github.com/tablekit/tablekit/table"
)

// Mover.Handle called on its own opens a root Mover.move span with the SDK's
// table spans under it (under a Worker's Worker.handle span it is folded
// into that one, as the SDK folds nested client spans). MoveBatches opens
// Mover.MoveBatches.
func TestMoverSpans(t *testing.T) {
	var rec trace.Recorder
	ctx := t.Context()
	tables, queues := fake.NewTableService(nil), fake.NewQueueService(nil)
	to := &aztables.ClientOptions{}
	to.TracingProvider = rec.Provider()
	qo := &azqueue.ClientOptions{}
	qo.TracingProvider = rec.Provider()
	cur, arc := tables.NewClient("Current", to), tables.NewClient("Archive", to)
	q, poison := queues.NewQueueClient("archive", qo), queues.NewQueueClient("archive-poison", qo)
	for _, err := range []error{
		func() error { _, err := cur.CreateTable(ctx, nil); return err }(),
		func() error { _, err := arc.CreateTable(ctx, nil); return err }(),
		func() error { _, err := q.Create(ctx, nil); return err }(),
		func() error { _, err := poison.Create(ctx, nil); return err }(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	current, _ := table.New[Employee](cur, nil)
	archive, _ := table.New[Employee](arc, nil)
	for _, rk := range []string{"000456", "000457"} {
		if err := current.Add(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: rk}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	mover := consistency.NewMover[Employee](current, archive, consistency.NewSender(q, nil),
		&consistency.MoverOptions{TracingProvider: rec.Provider()})

	// Process on its own: a root Mover.move span over the read, write, delete.
	if err := mover.Request(ctx, "Sales", "000456", nil); err != nil {
		t.Fatal(err)
	}
	resp, err := q.DequeueMessages(ctx, nil)
	if err != nil || len(resp.Messages) != 1 {
		t.Fatal(resp, err)
	}
	var env envelope.Envelope
	if err := json.Unmarshal([]byte(*resp.Messages[0].MessageText), &env); err != nil {
		t.Fatal(err)
	}
	before := len(rec.Spans())
	if err := mover.Process(ctx, &consistency.Message{Type: env.Type, Key: env.Key, Enqueued: env.Enqueued, Payload: env.Payload}); err != nil {
		t.Fatal(err)
	}
	spans := rec.Spans()
	got := spansNamed(t, spans, "Mover.move")
	if len(got) != 1 || got[0] < before || spans[got[0]].Attributes[trace.AttrPartition] != "Sales" ||
		spans[got[0]].Attributes[trace.AttrOutcome] != "ok" || spans[got[0]].Parent != -1 {
		t.Fatalf("Mover.move spans %v of %+v: want one root, partition Sales, ok", got, spans[before:])
	}
	if _, err := q.DeleteMessage(ctx, *resp.Messages[0].MessageID, *resp.Messages[0].PopReceipt, nil); err != nil {
		t.Fatal(err)
	}

	// ProcessBatch on a Worker: one span over its reads and transactions.
	if err := mover.Request(ctx, "Sales", "000457", nil); err != nil {
		t.Fatal(err)
	}
	before = len(rec.Spans())
	w := consistency.NewWorker(q, poison, nil)
	if err := w.HandleBatch(mover.MessageType(), mover.ProcessBatch); err != nil {
		t.Fatal(err)
	}
	st, err := w.Drain(ctx, nil)
	if err != nil || st.Processed != 1 || st.Batches != 1 {
		t.Fatal(st, err)
	}
	spans = rec.Spans()
	got = spansNamed(t, spans, "Mover.ProcessBatch")
	if len(got) != 1 || got[0] < before || spans[got[0]].Attributes["tablekit.moved"] != int64(1) ||
		spans[got[0]].Attributes["tablekit.messages"] != int64(1) || spans[got[0]].Status == tracing.SpanStatusError {
		t.Fatalf("Mover.ProcessBatch spans %v of %+v: want one, 1 message, 1 moved, ok", got, spans[before:])
	}
}
