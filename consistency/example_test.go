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

	mover := consistency.NewMover[Employee](current, archive, consistency.NewSender(q, nil), nil)
	_ = mover.Request(ctx, "Sales", "000456", nil)

	worker := consistency.NewWorker(q, poison, nil)
	_ = worker.Handle(mover.MessageType(), mover.Process)
	stats, _ := worker.Drain(ctx, nil)

	_, errCur := current.Get(ctx, "Sales", "000456", nil)
	moved, _ := archive.Get(ctx, "Sales", "000456", nil)
	fmt.Println(stats.Processed, table.Is(errCur, table.ErrNotFound), moved.Name, queues.Len("archive"))
	// Output: 1 true Employee 456 0
}

// A worker with a handler of its own: messages it cannot ever handle go to
// the poison queue at once instead of being retried.
func ExampleWorker() {
	ctx := context.Background()
	queues := fake.NewQueueService(nil)
	q, poison := queues.NewQueueClient("stats", nil), queues.NewQueueClient("stats-poison", nil)
	_, _ = q.Create(ctx, nil)
	_, _ = poison.Create(ctx, nil)

	sender := consistency.NewSender(q, nil)
	type hourly struct{ Hour, Messages int }
	_ = sender.Send(ctx, "stats.hourly.v1", "2026-11-21T14", hourly{Hour: 14, Messages: 42}, nil)
	_ = sender.Send(ctx, "stats.hourly.v1", "2026-11-21T99", hourly{Hour: 99}, nil)

	total := 0
	quiet := slog.New(slog.DiscardHandler) // failures log at Warn; default: slog.Default()
	worker := consistency.NewWorker(q, poison, &consistency.WorkerOptions{Concurrency: 1, Logger: quiet})
	_ = worker.Handle("stats.hourly.v1", func(ctx context.Context, m *consistency.Message) error {
		var h hourly
		if err := m.Decode(&h); err != nil {
			return err // already Permanent
		}
		if h.Hour > 23 {
			return consistency.Permanent(fmt.Errorf("hour %d", h.Hour))
		}
		total += h.Messages
		return nil
	})
	stats, err := worker.Drain(ctx, nil)
	fmt.Println(total, stats.Processed, stats.Poisoned, queues.Len("stats"), queues.Len("stats-poison"))
	// Drain says what failed: counts per type and each type's last error.
	var report *consistency.FailureReport
	if errors.As(err, &report) {
		fmt.Println(report.ByType["stats.hourly.v1"].Poisoned, report.ByType["stats.hourly.v1"].LastError)
	}
	// Output:
	// 42 1 1 0 1
	// 1 hour 99
}
