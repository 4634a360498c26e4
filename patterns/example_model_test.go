package patterns_test

import (
	"context"
	"fmt"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// An employee model declared once: primaries under "empid_", a unique
// email index and a last-name list, both in the employee's partition, so
// every write keeps them in the employee's own transaction and reads of
// primaries never see an index row.
func ExampleModel() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Employees", nil)
	_, _ = client.CreateTable(ctx, nil)

	employeeTable, err := table.New[Employee](client, nil)
	if err != nil {
		panic(err)
	}
	employees, err := patterns.OpenModel(ctx, employeeTable, &patterns.ModelOptions[Employee]{
		Name:    "employee",
		Primary: "empid_",
		Copies: []patterns.IndexDef[Employee]{
			{Name: "email", Prefix: "email_", Unique: true, Value: func(e *Employee) string { return e.Email }},
		},
		Lists: []patterns.ListDef[Employee]{
			{Name: "lastname", Prefix: "lastname_", Value: func(e *Employee) string { return e.LastName }},
		},
	})
	if err != nil {
		panic(err)
	}

	for _, e := range []*Employee{
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000152"}, FirstName: "Jun", LastName: "Jones", Email: "junj@contoso.com"},
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000223"}, FirstName: "Ben", LastName: "Jones", Email: "jonesj@contoso.com"},
	} {
		if err := employees.Add(ctx, e, nil); err != nil { // the employee, its email copy and its list entry, one transaction
			panic(err)
		}
	}

	byEmail, err := employees.Lookup(ctx, "email", "Sales", "jonesj@contoso.com", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("email:", byEmail.RowKey, byEmail.FirstName)

	jones, err := employees.LookupEntities(ctx, "lastname", "Sales", "Jones", nil)
	if err != nil {
		panic(err)
	}
	for _, e := range jones {
		fmt.Println("Jones:", e.RowKey, e.FirstName)
	}

	primaries := 0
	for _, err := range employees.Query(ctx, nil) {
		if err != nil {
			panic(err)
		}
		primaries++
	}
	fmt.Println("primaries:", primaries)
	// Output:
	// email: empid_000223 Ben
	// Jones: empid_000152 Jun
	// Jones: empid_000223 Ben
	// primaries: 2
}
