package table_test

import (
	"context"
	"fmt"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

type Employee struct {
	table.Meta
	FirstName string
	LastName  string
	Age       int
}

func Example() {
	ctx := context.Background()
	svc := fake.NewTableService(nil) // or aztables.NewServiceClientFromConnectionString
	client := svc.NewClient("Employees", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		panic(err)
	}
	employees, err := table.New[Employee](client, nil)
	if err != nil {
		panic(err)
	}

	e := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, FirstName: "Don", LastName: "Hall", Age: 34}
	if err := employees.Add(ctx, e, nil); err != nil {
		panic(err)
	}
	err = employees.Add(ctx, e, nil)
	fmt.Println("second Add already exists:", table.IsAlreadyExists(err))

	// Change it with optimistic concurrency: read, change, write with the ETag.
	updated, err := employees.Modify(ctx, "Sales", "000123", func(e *Employee) error {
		e.Age++
		return nil
	}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("age:", updated.Age)

	f := table.RowBetween("Sales", "000100", "000199")
	fmt.Printf("%v: %v\n", table.Classify(f), f)
	for e, err := range employees.Query(ctx, &table.QueryOptions{Filter: f}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(e.RowKey, e.FirstName, e.LastName)
	}
	fmt.Println("requests:", svc.Total())
	// Output:
	// second Add already exists: true
	// age: 35
	// range query: (PartitionKey eq 'Sales') and (RowKey ge '000100') and (RowKey le '000199')
	// 000123 Don Hall
	// requests: 6
}

func ExampleFilter() {
	f := table.And(table.Partition("Sales"), table.Prop("LastName").Eq("O'Brien"), table.Prop("Age").Ge(30))
	fmt.Println(f)
	fmt.Println(table.Classify(f))
	// Output:
	// (PartitionKey eq 'Sales') and (LastName eq 'O''Brien') and (Age ge 30L)
	// partition scan
}
