package consistency_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"

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

	mover := consistency.NewMover[Employee](current, consistency.TableTarget[Employee]{Table: archive}, consistency.NewSender(q, nil), nil)
	_ = mover.Request(ctx, "Sales", "000456", nil)

	worker := consistency.NewWorker(q, poison, nil)
	_ = worker.Handle(mover.Type(), mover.Handle)
	stats, _ := worker.Drain(ctx, nil)

	_, errCur := current.Get(ctx, "Sales", "000456", nil)
	moved, _ := archive.Get(ctx, "Sales", "000456", nil)
	fmt.Println(stats.Processed, table.IsNotFound(errCur), moved.Name, queues.Len("archive"))
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

// Three processes share twelve queues: each runs this. Senders route by
// key; each process's Role takes its share of the queues through blob
// leases and works on them, gives some up when another process joins, and
// takes over a dead process's queues when its leases expire. (Not run: it
// needs a storage account or Azurite; the fake's blob has no leases yet.)
func ExampleRole() {
	ctx := context.Background()
	cs := "UseDevelopmentStorage=true" // your connection string
	var set []consistency.OwnedQueue
	var queues []consistency.Queue
	for i := range 12 {
		name := fmt.Sprintf("orders-%02d", i)
		q, _ := azqueue.NewQueueClientFromConnectionString(cs, name, nil)
		p, _ := azqueue.NewQueueClientFromConnectionString(cs, name+"-poison", nil)
		set = append(set, consistency.OwnedQueue{Name: name, Queue: q, Poison: p})
		queues = append(queues, q)
	}
	blobs, _ := azblob.NewClientFromConnectionString(cs, nil)

	// Anywhere: send; the key picks the queue.
	sender, _ := consistency.NewShardedSender(queues, nil)
	_ = sender.Send(ctx, "order.placed.v1", "order-1042", map[string]int{"qty": 3}, nil)

	// In each worker process: one Role on the shared "leases" container.
	role, err := consistency.NewRole(blobs, "leases", set, &consistency.RoleOptions{Name: "worker-a"})
	if err != nil {
		panic(err)
	}
	_ = role.Handle("order.placed.v1", func(ctx context.Context, m *consistency.Message) error {
		return nil // read the source, make the target match
	})
	_ = role.Run(ctx, nil) // until ctx ends; then releases its queues
}
