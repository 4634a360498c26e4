package table_test

import (
	"context"
	"fmt"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// A delete guarded by the version read: a copy read before an update is
// refused, the current value deletes.
func ExampleTable_DeleteValue() {
	ctx := context.Background()
	client := fake.NewTableService(nil).NewClient("Employees", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		panic(err)
	}
	employees, _ := table.New[Employee](client, nil)
	don := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, FirstName: "Don", Age: 34}
	if err := employees.Add(ctx, don, nil); err != nil {
		panic(err)
	}
	stale := *don
	don.Age = 35
	if err := employees.Update(ctx, don, nil); err != nil {
		panic(err)
	}
	err := employees.DeleteValue(ctx, &stale, nil)
	fmt.Println("the version before the update:", table.Is(err, table.ErrPreconditionFailed))
	fmt.Println("the current version:", employees.DeleteValue(ctx, don, nil))
	// Output:
	// the version before the update: true
	// the current version: <nil>
}

// Meta gives the keys a type declares, composed from its fields before any
// write; Client is the client to send a transaction of the table's values
// through.
func ExampleTable_Meta() {
	ctx := context.Background()
	client := fake.NewTableService(nil).NewClient("Orders", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		panic(err)
	}
	orders, _ := table.New[Order](client, nil)
	a := &Order{Customer: "C042", Year: 2026, ID: "a", Amount: 10}
	b := &Order{Customer: "C042", Year: 2026, ID: "b", Amount: 20}
	m := orders.Meta(a)
	fmt.Println(m.PartitionKey, m.RowKey)
	if _, err := batch.Submit(ctx, orders.Client(), []batch.Op{batch.Add(a), batch.Add(b)}, nil); err != nil {
		panic(err)
	}
	fmt.Println(orders.Meta(b).RowKey, orders.Meta(b).ETag != "")
	// Output:
	// C042 order_2026!a!
	// order_2026!b! true
}
