package table_test

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// An index copy as a pattern writes it: the primary's properties, under
// other keys, plus a property naming its owner; then read back and decoded
// into the typed struct, with no JSON handled by hand.
func ExampleEntity() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Employees", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		panic(err)
	}
	employees, _ := table.New[Employee](client, nil)
	raw := employees.Entities() // same client, entities as *table.Entity

	e := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000123"}, FirstName: "Don", LastName: "Hall", Age: 34}
	cp, err := employees.ToEntity(e) // no request
	if err != nil {
		panic(err)
	}
	cp.RowKey = "lastname_Hall_000123"
	cp.Set("TkIndexOf", table.ValueOf(e.RowKey))
	// The primary and its copy in one transaction; a *table.Entity is a
	// batch value like any struct that embeds Meta.
	if _, err := batch.Submit(ctx, client, []batch.Op{batch.Add(e), batch.Upsert(cp, aztables.UpdateModeReplace)}, nil); err != nil {
		panic(err)
	}

	got, err := raw.Get(ctx, "Sales", "lastname_Hall_000123", nil)
	if err != nil {
		panic(err)
	}
	owner, _ := got.Properties["TkIndexOf"].AsString()
	age, _ := got.Properties["Age"].AsInt64()
	fmt.Println("copy of", owner, "age", age, got.Properties["Age"].Type())
	typed, err := employees.FromEntity(got) // no request
	if err != nil {
		panic(err)
	}
	fmt.Println(typed.FirstName, typed.LastName, typed.RowKey)
	// Output:
	// copy of empid_000123 age 34 Edm.Int64
	// Don Hall lastname_Hall_000123
}
