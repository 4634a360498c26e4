package consistency_test

import (
	"context"
	"fmt"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

type Employee struct {
	table.Meta
	Name string
}

// Archive employee #456: the client enqueues, a worker moves the entity.
func ExampleMover() {
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
	_ = current.Add(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000456"}, Name: "Employee 456"}, nil)

	mover := consistency.NewMover[Employee](current, consistency.TableTarget[Employee]{Table: archive}, consistency.NewSender(q, nil))
	_ = mover.Request(ctx, "Sales", "000456")

	worker := consistency.NewWorker(q, poison, nil)
	_ = worker.Handle(mover.Type(), mover.Handle)
	stats, _ := worker.Drain(ctx)

	_, errCur := current.Get(ctx, "Sales", "000456", nil)
	moved, _ := archive.Get(ctx, "Sales", "000456", nil)
	fmt.Println(stats.Processed, table.IsNotFound(errCur), moved.Name, queues.Len("archive"))
	// Output: 1 true Employee 456 0
}
