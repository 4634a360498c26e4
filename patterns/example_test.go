package patterns_test

import (
	"context"
	"fmt"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

type Employee struct {
	table.Meta
	FirstName string
	LastName  string
	Email     string
}

func ExampleIntraPartitionIndex() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Employees", nil)
	_, _ = client.CreateTable(ctx, nil)

	employeeTable, err := table.New[Employee](client, nil)
	if err != nil {
		panic(err)
	}
	employees, err := patterns.NewIntraPartitionIndex[Employee](employeeTable, "empid_", []patterns.IndexDef[Employee]{
		{Name: "email", Prefix: "email_", Unique: true, Value: func(e *Employee) string { return e.Email }},
	}, nil)

	if err != nil {
		panic(err)
	}
	e := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000223"}, FirstName: "Ben", LastName: "Jones", Email: "jonesj@contoso.com"}
	if err := employees.Add(ctx, e, nil); err != nil { // the entity and its email copy, one transaction
		panic(err)
	}
	found, err := employees.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil) // one point query
	if err != nil {
		panic(err)
	}
	fmt.Println(found.RowKey, found.FirstName, found.LastName)
	fmt.Println("requests:", svc.Total()-1) // not counting CreateTable
	// Output:
	// empid_000223 Ben Jones
	// requests: 2
}

func ExampleIndexEntities() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Employees", nil)
	_, _ = client.CreateTable(ctx, nil)

	employeeTable, err := table.New[Employee](client, nil)
	if err != nil {
		panic(err)
	}
	byLastName, err := patterns.NewIndexEntities[Employee](employeeTable, "lname_", func(e *Employee) string { return e.LastName }, nil)
	if err != nil {
		panic(err)
	}
	for _, id := range []string{"000152", "000223"} {
		if _, err := byLastName.Add(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: id}, LastName: "Jones"}, nil); err != nil {
			panic(err)
		}
	}
	ids, err := byLastName.Lookup(ctx, "Sales", "Jones", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(ids)
	// Output:
	// [000152 000223]
}
