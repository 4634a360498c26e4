package patterns_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Adding a unique email index to a model whose employees are stored
// already, while writes go on: Build marks it building (writes maintain
// it, reads of it wait), the worker fills in the past a range at a time,
// and the index becomes active.
func ExampleModel_Build() {
	ctx := context.Background()
	tables, queues := fake.NewTableService(nil), fake.NewQueueService(nil)
	client := tables.NewClient("Employees", nil)
	_, _ = client.CreateTable(ctx, nil)
	queue, poison := queues.NewQueueClient("employees", nil), queues.NewQueueClient("employees-poison", nil)
	_, _ = queue.Create(ctx, nil)
	_, _ = poison.Create(ctx, nil)
	employeeTable, err := table.New[Employee](client, nil)
	if err != nil {
		panic(err)
	}
	opts := &patterns.ModelOptions[Employee]{Name: "employees", Primary: "empid_", Queue: queue, StateRefresh: 500 * time.Millisecond}
	before, err := patterns.OpenModel(ctx, employeeTable, opts)
	if err != nil {
		panic(err)
	}
	for i := range 30 {
		e := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: fmt.Sprintf("empid_%06d", i)}, Email: fmt.Sprintf("e%d@contoso.com", i)}
		if err := before.Add(ctx, e, nil); err != nil {
			panic(err)
		}
	}

	opts.Copies = []patterns.IndexDef[Employee]{{Name: "email", Prefix: "email_", Unique: true, Value: func(e *Employee) string { return e.Email }}}
	employees, err := patterns.OpenModel(ctx, employeeTable, opts) // opts declares the new index "email"
	if err != nil {
		panic(err)
	}
	err = employees.Build(ctx, "email", nil) // writes maintain it; workers fill in the past
	if err != nil {
		panic(err)
	}
	w := consistency.NewWorker(queue, poison, &consistency.WorkerOptions{Visibility: time.Second})
	_ = w.Handle(employees.MessageType(), employees.Process)
	for {
		_, _ = w.Drain(ctx, nil)
		p, err := employees.IndexStatus(ctx, "email", nil) // p.State: IndexBuilding, then IndexActive
		if err != nil {
			panic(err)
		}
		if p.State == patterns.IndexActive {
			fmt.Println(p.State, p.Entities, "entities")
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	found, err := employees.Lookup(ctx, "email", "Sales", "e7@contoso.com", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(found.RowKey)
	// Output:
	// active 30 entities
	// empid_000007
}
