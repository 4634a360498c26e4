package batch_test

import (
	"context"
	"errors"
	"fmt"

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
	if _, err := batch.Submit(ctx, client, batch.Add(emp), batch.Add(byEmail)); err != nil {
		panic(err)
	}
	fmt.Println("ETag recovered:", emp.ETag != "")

	// A failed transaction names its operation; nothing of it is written.
	other := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000152"}, Name: "Jun Cao"}
	_, err := batch.Submit(ctx, client, batch.Add(other), batch.Add(byEmail))
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
