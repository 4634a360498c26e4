package patterns_test

import (
	"context"
	"fmt"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

type Department struct {
	table.Meta
	EntityType   string
	ManagerName  string
	ManagerEmail string
}

type Person struct {
	table.Meta
	EntityType string
	FirstName  string
	LastName   string
	Email      string
	Department string
}

type Review struct {
	table.Meta
	EntityType    string
	ManagerRating int
}

// The department entity keeps a copy of its manager's name and email, so one
// point query answers "who manages Sales?"; the copy changes with the
// manager in one transaction.
func ExampleDenormalized() {
	ctx := context.Background()
	svc, client := newClient("Company")
	deps, _ := table.New[Department](client, nil)
	_ = deps.Add(ctx, &Department{Meta: table.Meta{PartitionKey: "Sales", RowKey: "department"}, EntityType: "Department"}, nil)

	personTable, err := table.New[Person](client, nil)
	if err != nil {
		panic(err)
	}
	departmentTable, err := table.New[Department](client, nil)
	if err != nil {
		panic(err)
	}
	managers, err := patterns.NewDenormalized[Person, Department](personTable, departmentTable, []string{"ManagerName", "ManagerEmail"}, func(p *Person, d *Department) {
		d.ManagerName, d.ManagerEmail = p.FirstName+" "+p.LastName, p.Email
	})
	if err != nil {
		panic(err)
	}
	svc.ResetCounts()
	don := &Person{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, EntityType: "Employee", FirstName: "Don", LastName: "Hall", Email: "donh@contoso.com"}
	if err := managers.Update(ctx, don, []string{"department"}, nil); err != nil {
		panic(err)
	}
	d, _ := deps.Get(ctx, "Sales", "department", nil)
	fmt.Println(d.ManagerName, d.ManagerEmail, "requests:", svc.Total())
	// Output: Don Hall donh@contoso.com requests: 2
}

// Joining in the client: the small, rarely changing department table is
// loaded once and every later lookup is served from memory.
func ExampleReferenceCache() {
	ctx := context.Background()
	svc, client := newClient("Departments")
	deps, _ := table.New[Department](client, nil)
	for _, name := range []string{"Sales", "Marketing"} {
		_ = deps.Add(ctx, &Department{Meta: table.Meta{PartitionKey: name, RowKey: "department"}, ManagerName: name + " manager"}, nil)
	}
	cache := patterns.NewReferenceCache(deps, nil)
	svc.ResetCounts()
	for i := 0; i < 100; i++ {
		if _, _, err := cache.Get(ctx, "Sales", "department", nil); err != nil {
			panic(err)
		}
	}
	d, ok, _ := cache.Get(ctx, "Marketing", "department", nil)
	// One load; its query took two pages, as the service may cut a page
	// where a partition ends (the fake does).
	fmt.Println(d.ManagerName, ok, "loads:", cache.Loads(), "requests:", svc.Total())
	// Output: Marketing manager true loads: 1 requests: 2
}

// An email index in other partitions than the employees, kept by a queue:
// Add writes the employee with a message around it, a worker writes the copy.
func ExampleModel_crossCopies() {
	ctx := context.Background()
	_, client := newClient("Employees")
	copies := fake.NewTableService(nil).NewClient("EmailCopies", nil)
	_, _ = copies.CreateTable(ctx, nil)
	queues := fake.NewQueueService(nil)
	q, poison := queues.NewQueueClient("index", nil), queues.NewQueueClient("index-poison", nil)
	_, _ = q.Create(ctx, nil)
	_, _ = poison.Create(ctx, nil)

	personTable, err := table.New[Person](client, nil)
	if err != nil {
		panic(err)
	}
	copyTable, err := table.New[table.Entity](copies, nil)
	if err != nil {
		panic(err)
	}
	people, err := patterns.OpenModel(ctx, personTable, &patterns.ModelOptions[Person]{Name: "people", Queue: q, CrossCopies: []patterns.IndexDef[Person]{{
		Name:         "email",
		Table:        copyTable,
		PartitionKey: func(p *Person) string { return "email_" + p.Department },
		Value:        func(p *Person) string { return p.Email },
	}}})
	if err != nil {
		panic(err)
	}
	ben := &Person{Meta: table.Meta{PartitionKey: "empid_Sales", RowKey: "000223"}, Department: "Sales", FirstName: "Ben", LastName: "Jones", Email: "jonesj@contoso.com"}
	if err := people.Add(ctx, ben, nil); err != nil {
		panic(err)
	}
	worker := consistency.NewWorker(q, poison, nil)
	_ = worker.Handle(people.MessageType(), people.Process)
	if _, err := worker.Drain(ctx, nil); err != nil { // in production: worker.Run on its own
		panic(err)
	}
	found, err := people.Lookup(ctx, "email", "email_Sales", "jonesj@contoso.com", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(found.PartitionKey, found.RowKey, found.FirstName, found.LastName)
	// Output: empid_Sales 000223 Ben Jones
}

// Last-name lists kept in another table (option 3 of the guide), or in a
// blob per value (option 1), eventually consistent with the employees
// through a queue.
func ExampleModel_remoteLists() {
	ctx := context.Background()
	tables := fake.NewTableService(nil)
	people, lists := tables.NewClient("Employees", nil), tables.NewClient("LastNames", nil)
	_, _ = people.CreateTable(ctx, nil)
	_, _ = lists.CreateTable(ctx, nil)
	bc := fake.NewBlobService(nil).NewClient(nil)
	_, _ = bc.CreateContainer(ctx, "indexes", nil)
	queues := fake.NewQueueService(nil)
	q, poison := queues.NewQueueClient("lastnames", nil), queues.NewQueueClient("lastnames-poison", nil)
	_, _ = q.Create(ctx, nil)
	_, _ = poison.Create(ctx, nil)

	listsTable, err := table.New[table.Entity](lists, nil)
	if err != nil {
		panic(err)
	}
	personTable, _ := table.New[Person](people, nil)
	lastName := func(p *Person) string { return p.LastName }
	employees, err := patterns.OpenModel(ctx, personTable, &patterns.ModelOptions[Person]{Name: "employees", Queue: q, RemoteLists: []patterns.ListDef[Person]{
		{Name: "lastname", Value: lastName, Table: listsTable, Partition: "lastnames", Prefix: "lname_"},
		{Name: "lastname-blobs", Value: lastName, Blobs: bc, Container: "indexes", Prefix: "lname/"},
	}})
	if err != nil {
		panic(err)
	}
	for _, p := range []*Person{
		{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000152"}, LastName: "Jones"},
		{Meta: table.Meta{PartitionKey: "Marketing", RowKey: "000223"}, LastName: "Jones"},
	} {
		if err := employees.Add(ctx, p, nil); err != nil {
			panic(err)
		}
	}
	worker := consistency.NewWorker(q, poison, nil)
	_ = worker.Handle(employees.MessageType(), employees.Process)
	if _, err := worker.Drain(ctx, nil); err != nil {
		panic(err)
	}
	for _, index := range []string{"lastname", "lastname-blobs"} {
		ids, _ := employees.IDs(ctx, index, "", "Jones", nil)
		fmt.Println(index, len(ids))
	}
	// Output:
	// lastname 2
	// lastname-blobs 2
}
