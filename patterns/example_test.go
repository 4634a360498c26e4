package patterns_test

import (
	"context"
	"fmt"
	"strings"

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

// A unique email copy in the employee's partition, written in the
// employee's transaction and read back by Lookup.
func ExampleModel_Lookup() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Employees", nil)
	_, _ = client.CreateTable(ctx, nil)

	employeeTable, err := table.New[Employee](client, nil)
	if err != nil {
		panic(err)
	}
	employees, err := patterns.OpenModel(ctx, employeeTable, &patterns.ModelOptions[Employee]{Name: "employees", Primary: "empid_", Copies: []patterns.IndexDef[Employee]{
		{Name: "email", Prefix: "email_", Unique: true, Value: func(e *Employee) string { return e.Email }},
	}})
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
	fmt.Println("requests:", svc.Total()-2) // not counting CreateTable and OpenModel's read of the indexes' state
	// Output:
	// empid_000223 Ben Jones
	// requests: 2
}

// Index entities in the employees' partition (the guide's option 2): a
// last name's list of RowKeys, changed in each employee's transaction.
func ExampleModel_IDs() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Employees", nil)
	_, _ = client.CreateTable(ctx, nil)

	employeeTable, err := table.New[Employee](client, nil)
	if err != nil {
		panic(err)
	}
	employees, err := patterns.OpenModel(ctx, employeeTable, &patterns.ModelOptions[Employee]{Name: "employees", Primary: "empid_", Lists: []patterns.ListDef[Employee]{
		{Name: "lastname", Prefix: "lname_", Value: func(e *Employee) string { return e.LastName }},
	}})
	if err != nil {
		panic(err)
	}
	for _, id := range []string{"000152", "000223"} {
		if err := employees.Add(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_" + id}, LastName: "Jones"}, nil); err != nil {
			panic(err)
		}
	}
	ids, err := employees.IDs(ctx, "lastname", "Sales", "Jones", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(ids)
	// Output:
	// [{Sales empid_000152} {Sales empid_000223}]
}

// A non-unique first-name copy that stores two properties: Find reads the
// copies of a value, then each employee whole.
func ExampleModel_Find() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Employees", nil)
	_, _ = client.CreateTable(ctx, nil)

	employeeTable, err := table.New[Employee](client, nil)
	if err != nil {
		panic(err)
	}
	employees, err := patterns.OpenModel(ctx, employeeTable, &patterns.ModelOptions[Employee]{Name: "employees", Primary: "empid_", Copies: []patterns.IndexDef[Employee]{
		{Name: "first", Prefix: "first_", Value: func(e *Employee) string { return e.FirstName }, Project: []string{"FirstName", "LastName"}},
	}})
	if err != nil {
		panic(err)
	}
	for i, last := range []string{"Jones", "Hall", "Cao"} {
		e := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: fmt.Sprintf("empid_%06d", i)}, FirstName: "Ann", LastName: last, Email: strings.ToLower(last) + "@contoso.com"}
		if err := employees.Add(ctx, e, nil); err != nil {
			panic(err)
		}
	}
	for e, err := range employees.Find(ctx, "first", "Sales", "Ann", nil) {
		if err != nil {
			panic(err)
		}
		fmt.Println(e.RowKey, e.LastName, e.Email)
	}
	// Output:
	// empid_000000 Jones jones@contoso.com
	// empid_000001 Hall hall@contoso.com
	// empid_000002 Cao cao@contoso.com
}
