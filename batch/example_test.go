package batch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

type Employee struct {
	table.Meta
	Name  string
	Email string
}

func Example() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Employees", nil)
	_, _ = client.CreateTable(ctx, nil)

	// The employee and its email index row change together, or not at all.
	emp := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, Name: "Don Hall", Email: "donh@contoso.com"}
	byEmail := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "email_donh@contoso.com"}, Name: "Don Hall", Email: "donh@contoso.com"}
	if _, err := batch.Submit(ctx, client, []batch.Op{batch.Add(emp), batch.Add(byEmail)}, nil); err != nil {
		panic(err)
	}
	fmt.Println("ETag recovered:", emp.ETag != "")

	// A failed transaction names its operation; nothing of it is written.
	other := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000152"}, Name: "Jun Cao"}
	_, err := batch.Submit(ctx, client, []batch.Op{batch.Add(other), batch.Add(byEmail)}, nil)
	var te *batch.TransactionError
	if errors.As(err, &te) {
		fmt.Println("failed at", te.Index, te.StatusCode, te.ErrorCode)
	}
	fmt.Println("entities:", svc.Len("Employees"))
	// Output:
	// ETag recovered: true
	// failed at 1 409 EntityAlreadyExists
	// entities: 2
}

// The bulk writer groups operations by partition into transactions of up
// to 100 and keeps several partitions in flight.
func ExampleWriter() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Employees", nil)
	_, _ = client.CreateTable(ctx, nil)

	var ops []batch.Op
	for _, dept := range []string{"Sales", "Marketing"} {
		for i := 0; i < 150; i++ {
			ops = append(ops, batch.Add(&Employee{Meta: table.Meta{PartitionKey: dept, RowKey: fmt.Sprintf("empid_%06d", i)}}))
		}
	}
	sum, err := batch.NewWriter(client, nil).Write(ctx, slices.Values(ops), nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(sum.Operations, "entities in", sum.Transactions, "transactions,", sum.Requests, "requests")
	// Output: 300 entities in 4 transactions, 4 requests
}

// A transaction checks the service's rules as operations are appended, so
// a bad one is refused before any request.
func ExampleTransaction() {
	tx := batch.NewTransaction(nil)
	_ = tx.Append(batch.Add(&Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}}))
	err := tx.Append(batch.Add(&Employee{Meta: table.Meta{PartitionKey: "Marketing", RowKey: "empid_000152"}}))
	fmt.Println(errors.Is(err, batch.ErrMixedPartitions), tx.Len(), tx.PartitionKey())
	// Output: true 1 Sales
}
