package batch_test

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// A bulk load across three partitions, one of which already holds an
// employee the load adds again. Each transaction commits whole or not at
// all: the failed one is reported with its operation, the rest of its
// partition is skipped (it may depend on the failed part), and the other
// partitions are written in full. The Summary counts all of it.
func ExampleWriter_summary() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Employees", nil)
	_, _ = client.CreateTable(ctx, nil)
	employees, _ := table.New[Employee](client, nil)
	if err := employees.Add(ctx, &Employee{Meta: table.Meta{PartitionKey: "Support", RowKey: "empid_000007"}, Name: "Ana Lima"}, nil); err != nil {
		panic(err)
	}

	// 150 new employees in each of Sales, Marketing and Support: two
	// transactions a partition (100 operations, then 50).
	ops := func(yield func(batch.Op) bool) {
		for _, dept := range []string{"Sales", "Marketing", "Support"} {
			for i := range 150 {
				if !yield(batch.Add(&Employee{Meta: table.Meta{PartitionKey: dept, RowKey: fmt.Sprintf("empid_%06d", i)}})) {
					return
				}
			}
		}
	}
	w := batch.NewWriter(client, &batch.WriterOptions{Parallelism: 4})
	sum, err := w.Write(ctx, iter.Seq[batch.Op](ops), nil)

	fmt.Printf("committed: %d operations in %d transactions, %d requests\n", sum.Operations, sum.Transactions, sum.Requests)
	fmt.Printf("failed: %d transaction, %d operations skipped\n", sum.Failed, sum.Skipped)
	var we *batch.WriteError
	if errors.As(err, &we) {
		for _, te := range we.Failures {
			fmt.Println("failure:", te.Op.PartitionKey(), te.Op.RowKey(), "at", te.Index, te.StatusCode, te.ErrorCode)
		}
	}
	fmt.Println("stored:", svc.Len("Employees"))
	// Output:
	// committed: 300 operations in 4 transactions, 5 requests
	// failed: 1 transaction, 50 operations skipped
	// failure: Support empid_000007 at 7 409 EntityAlreadyExists
	// stored: 301
}
