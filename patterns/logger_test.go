package patterns

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// TestModelLogsAFailedConverge: a cross copies table that does not exist
// fails every Handle; the message returns to the queue and the failure is
// logged at Warn with the model's name.
func TestModelLogsAFailedConverge(t *testing.T) {
	deadline(t, workerDeadline)
	ctx := t.Context()
	tables := fake.NewTableService(nil)
	client := tables.NewClient("Primaries", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	missing := tables.NewClient("NoSuchTable", nil)
	queues := fake.NewQueueService(nil)
	q, poison := queues.NewQueueClient("index", nil), queues.NewQueueClient("index-poison", nil)
	_, _ = q.Create(ctx, nil)
	_, _ = poison.Create(ctx, nil)
	var logs bytes.Buffer
	m, err := OpenModel(ctx, tableOf(table.New[traced](client, nil)), &ModelOptions[traced]{
		Name: "traced", Queue: q, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		CrossCopies: []IndexDef[traced]{{
			Name: "email", Table: tableOf(table.New[table.Entity](missing, nil)), PartitionKey: func(v *traced) string { return "email_" + v.PartitionKey }, Value: func(v *traced) string { return v.Email },
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(ctx, &traced{Meta: table.Meta{PartitionKey: "Sales", RowKey: "1"}, Email: "a@x.com"}, nil); err != nil {
		t.Fatal(err)
	}
	w := consistency.NewWorker(q, poison, nil)
	if err := w.Handle(m.MessageType(), m.Process); err != nil {
		t.Fatal(err)
	}
	_, _ = w.Drain(ctx, nil)
	if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "could not converge") || !strings.Contains(out, "model=traced") {
		t.Fatalf("logs: %q, want a Warn naming the model", out)
	}
}
