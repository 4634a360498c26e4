package consistency_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// A move names the version it was asked for. Employee 152 changes after
// its move is requested, so its message moves nothing and goes to the
// poison queue for an operator to see; asking again moves the new version.
func ExampleMover_changedSource() {
	ctx := context.Background()
	tables, queues := fake.NewTableService(nil), fake.NewQueueService(nil)
	cur, arc := tables.NewClient("Current", nil), tables.NewClient("Archive", nil)
	_, _ = cur.CreateTable(ctx, nil)
	_, _ = arc.CreateTable(ctx, nil)
	q, poison := queues.NewQueueClient("archive", nil), queues.NewQueueClient("archive-poison", nil)
	_, _ = q.Create(ctx, nil)
	_, _ = poison.Create(ctx, nil)

	current, _ := table.New[Employee](cur, nil)
	archive, _ := table.New[Employee](arc, nil)
	for _, id := range []string{"000123", "000152"} {
		if err := current.Add(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: id}, Name: "Employee " + id}, nil); err != nil {
			panic(err)
		}
	}

	mover := consistency.NewMover[Employee](current, archive, consistency.NewSender(q, nil), nil)
	for _, id := range []string{"000123", "000152"} {
		if err := mover.Request(ctx, "Sales", id, nil); err != nil {
			panic(err)
		}
	}
	// Employee 152 changes after the request: the queued move is stale.
	if err := current.Upsert(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000152"}, Name: "Employee 152, renamed"}, nil); err != nil {
		panic(err)
	}

	quiet := slog.New(slog.DiscardHandler) // a poisoned message logs at Warn; default: slog.Default()
	worker := consistency.NewWorker(q, poison, &consistency.WorkerOptions{Logger: quiet})
	if err := worker.Handle(mover.MessageType(), mover.Process); err != nil {
		panic(err)
	}
	stats, err := worker.Drain(ctx, nil)
	var report *consistency.FailureReport
	fmt.Println("moved:", stats.Processed, "poisoned:", stats.Poisoned, errors.As(err, &report))
	fmt.Println("archive:", tables.Len("Archive"), "current:", tables.Len("Current"), "poison queue:", queues.Len("archive-poison"))

	// Asked again, the move takes the version the key holds now.
	if err := mover.Request(ctx, "Sales", "000152", nil); err != nil {
		panic(err)
	}
	if _, err := worker.Drain(ctx, nil); err != nil {
		panic(err)
	}
	moved, err := archive.Get(ctx, "Sales", "000152", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("archive:", tables.Len("Archive"), "current:", tables.Len("Current"), "-", moved.Name)
	// Output:
	// moved: 1 poisoned: 1 true
	// archive: 1 current: 1 poison queue: 1
	// archive: 2 current: 0 - Employee 152, renamed
}
