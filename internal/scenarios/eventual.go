package scenarios

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// Staff is an employee keyed as the guide's inter-partition index has it.
type Staff struct {
	table.Meta
	Department string
	Name       string
	Email      string
}

func tourArchive(ctx context.Context, w io.Writer, e *env) error {
	cur, err := e.newTable(ctx, "Current")
	if err != nil {
		return err
	}
	arc, err := e.newTable(ctx, "Archive")
	if err != nil {
		return err
	}
	q, err := e.newQueue(ctx, "work")
	if err != nil {
		return err
	}
	poison, err := e.newQueue(ctx, "poison")
	if err != nil {
		return err
	}
	current, _ := table.New[Staff](cur, nil)
	archive, _ := table.New[Staff](arc, nil)
	step := e.step(w)
	if err := current.Add(ctx, &Staff{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000456"}, Name: "Employee 456"}, nil); err != nil {
		return err
	}
	step("employee #456 is in the Current table")
	sender := consistency.NewSender(q, nil)
	mover := consistency.NewMover[Staff](current, consistency.TableTarget[Staff]{Table: archive}, sender)
	if err := mover.Request(ctx, "Sales", "000456"); err != nil {
		return err
	}
	step("the client asks for the move: one message with the keys")
	worker := consistency.NewWorker(q, poison, &consistency.WorkerOptions{PollInterval: 10 * time.Millisecond})
	if err := worker.Handle(mover.Type(), mover.Handle); err != nil {
		return err
	}
	st, err := worker.Drain(ctx)
	if err != nil {
		return err
	}
	_, inCurrent := current.Get(ctx, "Sales", "000456", nil)
	moved, err := archive.Get(ctx, "Sales", "000456", nil)
	if err != nil {
		return err
	}
	step(fmt.Sprintf("the worker read, copied, deleted, and deleted the message (%d processed): in Archive = %v, gone from Current = %v",
		st.Processed, moved.Name == "Employee 456", table.IsNotFound(inCurrent)))

	return nil
}

// tourInterPartition is the second half of the employees scenario: an
// email index under other PartitionKeys, kept by a queue.
func tourInterPartition(ctx context.Context, w io.Writer, e *env) error {
	cur, err := e.newTable(ctx, "Staff")
	if err != nil {
		return err
	}
	q, err := e.newQueue(ctx, "index")
	if err != nil {
		return err
	}
	poison, err := e.newQueue(ctx, "indexpoison")
	if err != nil {
		return err
	}
	worker := consistency.NewWorker(q, poison, &consistency.WorkerOptions{PollInterval: 10 * time.Millisecond})
	step := e.step(w)
	idx, err := patterns.NewInterPartitionIndex[Staff](cur, q, []patterns.CrossIndexDef[Staff]{{
		Name: "email", PartitionKey: func(s *Staff) string { return "email_" + s.Department }, Value: func(s *Staff) string { return s.Email },
	}}, nil)
	if err != nil {
		return err
	}
	_ = worker.Handle(patterns.IndexMessageType, idx.Handle)
	ben := &Staff{Meta: table.Meta{PartitionKey: "empid_Sales", RowKey: "000223"}, Department: "Sales", Name: "Ben Jones", Email: "jonesj@contoso.com"}
	step = e.step(w)
	if err := idx.Put(ctx, ben, nil); err != nil {
		return err
	}
	step("inter-partition index: write empid_Sales/000223 with its message around it")
	if _, err := worker.Drain(ctx); err != nil {
		return err
	}
	step("the worker makes the copy email_Sales/jonesj@contoso.com match the primary")
	found, err := idx.Lookup(ctx, "email", "email_Sales", "jonesj@contoso.com")
	if err != nil {
		return err
	}
	step(fmt.Sprintf("Lookup by email -> %s/%s %s", found.PartitionKey, found.RowKey, found.Name))
	return nil
}
