package benchkit

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// IndexRow is an employee of the index scenarios: its email is copied to
// another partition (a model's CrossCopies) and its last name listed in
// index entities elsewhere (a model's RemoteLists).
type IndexRow struct {
	table.Meta
	Email, Department, LastName string
}

// indexLastNames are the values of the list scenario: a batch of 32
// messages touches three lists.
var indexLastNames = []string{"Jones", "Smith", "O'Brien"}

// indexRound is one round of an index scenario: n new employees written
// (untimed) with their messages in a fresh queue; handle is the timed work.
type indexRound struct {
	q, poison *azqueue.QueueClient
	cleanup   func()
}

func (a *Account) indexRound(ctx context.Context) (*indexRound, *table.Table[IndexRow], *table.Table[table.Entity], error) {
	pName, dropP, err := a.NewTableName(ctx, "benchidx")
	if err != nil {
		return nil, nil, nil, err
	}
	cName, dropC, err := a.NewTableName(ctx, "benchcpy")
	if err != nil {
		dropP()
		return nil, nil, nil, err
	}
	r := &indexRound{cleanup: func() { dropP(); dropC() }}
	for _, q := range []**azqueue.QueueClient{&r.q, &r.poison} {
		c, err := azqueue.NewQueueClientFromConnectionString(a.Conn, "benchiq"+nowNano(), a.QueueOptions())
		if err == nil {
			_, err = c.Create(ctx, nil)
		}
		if err != nil {
			r.cleanup()
			return nil, nil, nil, err
		}
		*q = c
		prev := r.cleanup
		r.cleanup = func() { prev(); _, _ = c.Delete(context.Background(), nil) }
	}
	people, err := table.New[IndexRow](a.KitClient(pName), nil)
	if err != nil {
		r.cleanup()
		return nil, nil, nil, err
	}
	other, err := table.New[table.Entity](a.KitClient(cName), nil)
	if err != nil {
		r.cleanup()
		return nil, nil, nil, err
	}
	return r, people, other, nil
}

func indexEmployee(i int) *IndexRow {
	rk := keyrules.Uint64(uint64(i))
	return &IndexRow{Meta: table.Meta{PartitionKey: "Sales", RowKey: rk}, Email: "e" + rk + "@contoso.com", Department: "Sales", LastName: indexLastNames[i%len(indexLastNames)]}
}

// crossIndex is a model of a round with the email copied to another
// table (CrossCopies), with n employees added (their messages queued).
func (a *Account) crossIndex(ctx context.Context, n int) (*indexRound, *patterns.Model[IndexRow], error) {
	r, people, copies, err := a.indexRound(ctx)
	if err != nil {
		return nil, nil, err
	}
	x, err := patterns.OpenModel(ctx, people, &patterns.ModelOptions[IndexRow]{Name: "benchcross", Queue: r.q, CrossCopies: []patterns.IndexDef[IndexRow]{{
		Name: "email", Table: copies,
		PartitionKey: func(v *IndexRow) string { return "email_" + v.Department },
		Value:        func(v *IndexRow) string { return v.Email },
	}}})
	for i := 0; err == nil && i < n; i++ {
		err = x.Add(ctx, indexEmployee(i), nil)
	}
	if err != nil {
		r.cleanup()
		return nil, nil, err
	}
	return r, x, nil
}

// listIndex is a model of a round with the last names listed in another
// table (RemoteLists), with n employees added (their messages queued).
func (a *Account) listIndex(ctx context.Context, n int) (*indexRound, *patterns.Model[IndexRow], error) {
	r, people, lists, err := a.indexRound(ctx)
	if err != nil {
		return nil, nil, err
	}
	m, err := patterns.OpenModel(ctx, people, &patterns.ModelOptions[IndexRow]{Name: "benchlists", Queue: r.q, RemoteLists: []patterns.ListDef[IndexRow]{
		{Name: "lastname", Value: func(v *IndexRow) string { return v.LastName }, Table: lists, Partition: "lname", Prefix: "lname_"}}})
	for i := 0; err == nil && i < n; i++ {
		err = m.Add(ctx, indexEmployee(i), nil)
	}
	if err != nil {
		r.cleanup()
		return nil, nil, err
	}
	return r, m, nil
}

// workerDrain is the timed work of a per-message side: a Worker of
// concurrency conc running h until the queue is empty.
func workerDrain(r *indexRound, msgType string, h consistency.Handler, conc int) (func(context.Context) (int, error), error) {
	w := consistency.NewWorker(r.q, r.poison, &consistency.WorkerOptions{Concurrency: conc})
	if err := w.Handle(msgType, h); err != nil {
		return nil, err
	}
	return func(ctx context.Context) (int, error) {
		st, err := w.Drain(ctx, nil)
		if err == nil && st.Processed == 0 {
			err = fmt.Errorf("the worker handled nothing: %+v", st)
		}
		return int(st.Processed), err
	}, nil
}

// batchesDrain is the timed work of a batched side.
func batchesDrain(f func(ctx context.Context) (consistency.Stats, error)) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		st, err := f(ctx)
		if err == nil && (st.Poisoned != 0 || st.Retried != 0) {
			err = fmt.Errorf("the batched handler left messages: %+v", st)
		}
		return int(st.Processed), err
	}
}

// modelIndex is the model of a round: the guide's employees, an email
// copy in the partition and the last names listed in another table
// (RemoteLists), with n employees added (their messages queued).
func (a *Account) modelIndex(ctx context.Context, n int) (*indexRound, *patterns.Model[IndexRow], error) {
	r, people, lists, err := a.indexRound(ctx)
	if err != nil {
		return nil, nil, err
	}
	m, err := patterns.OpenModel(ctx, people, &patterns.ModelOptions[IndexRow]{
		Name:        "benchstaff",
		Primary:     "empid_",
		Copies:      []patterns.IndexDef[IndexRow]{{Name: "email", Prefix: "email_", Unique: true, Value: func(v *IndexRow) string { return v.Email }}},
		RemoteLists: []patterns.ListDef[IndexRow]{{Name: "lastname", Value: func(v *IndexRow) string { return v.LastName }, Table: lists, Partition: "lname", Prefix: "lname_"}},
		Queue:       r.q,
	})
	for i := 0; err == nil && i < n; i++ {
		v := indexEmployee(i)
		v.RowKey = "empid_" + v.RowKey
		err = m.Add(ctx, v, nil)
	}
	if err != nil {
		r.cleanup()
		return nil, nil, err
	}
	return r, m, nil
}

// queueScenario builds one round of a queue-driven scenario: n new
// employees written (untimed), their messages queued in r.q, and the
// handlers that take them one at a time and in batches (nil when the
// scenario has no batched handler).
type queueScenario func(ctx context.Context) (r *indexRound, msgType string, handle consistency.Handler, batch consistency.BatchHandler, err error)

// workerSide handles a scenario's messages one at a time with its Handler
// on a Worker of concurrency conc.
func workerSide(name string, conc int, setup queueScenario) Side {
	return Side{Name: fmt.Sprintf("%s.Process on a Worker, concurrency %d", name, conc), Round: func(ctx context.Context) (func(context.Context) (int, error), func(), error) {
		r, msgType, handle, _, err := setup(ctx)
		if err != nil {
			return nil, nil, err
		}
		work, err := workerDrain(r, msgType, handle, conc)
		if err != nil {
			r.cleanup()
			return nil, nil, err
		}
		return work, r.cleanup, nil
	}}
}

// batchesSide handles the same messages with the scenario's BatchHandler
// registered with HandleBatch on a Worker of concurrency conc.
func batchesSide(name string, conc int, setup queueScenario) Side {
	return Side{Name: fmt.Sprintf("%s.ProcessBatch on a Worker, concurrency %d", name, conc), Round: func(ctx context.Context) (func(context.Context) (int, error), func(), error) {
		r, msgType, _, batch, err := setup(ctx)
		if err != nil {
			return nil, nil, err
		}
		w := consistency.NewWorker(r.q, r.poison, &consistency.WorkerOptions{Concurrency: conc})
		if err := w.HandleBatch(msgType, batch); err != nil {
			r.cleanup()
			return nil, nil, err
		}
		return batchesDrain(func(ctx context.Context) (consistency.Stats, error) { return w.Drain(ctx, nil) }), r.cleanup, nil
	}}
}

// crossScenario: n messages of a model with cross copies (new employees,
// one partition).
func (a *Account) crossScenario(n int) queueScenario {
	return func(ctx context.Context) (*indexRound, string, consistency.Handler, consistency.BatchHandler, error) {
		r, x, err := a.crossIndex(ctx, n)
		if err != nil {
			return nil, "", nil, nil, err
		}
		return r, x.MessageType(), x.Process, x.ProcessBatch, nil
	}
}

// listScenario: n messages of a model with remote lists (new employees of
// three last names).
func (a *Account) listScenario(n int) queueScenario {
	return func(ctx context.Context) (*indexRound, string, consistency.Handler, consistency.BatchHandler, error) {
		r, m, err := a.listIndex(ctx, n)
		if err != nil {
			return nil, "", nil, nil, err
		}
		return r, m.MessageType(), m.Process, m.ProcessBatch, nil
	}
}

// modelScenario: n Model messages (new employees of three last names).
func (a *Account) modelScenario(n int) queueScenario {
	return func(ctx context.Context) (*indexRound, string, consistency.Handler, consistency.BatchHandler, error) {
		r, m, err := a.modelIndex(ctx, n)
		if err != nil {
			return nil, "", nil, nil, err
		}
		return r, m.MessageType(), m.Process, m.ProcessBatch, nil
	}
}

// CrossIndexWorker: a model with cross copies.
func (a *Account) CrossIndexWorker(n, conc int) Side {
	return workerSide("Model with cross copies", conc, a.crossScenario(n))
}

// ListIndexWorker: a model with remote lists.
func (a *Account) ListIndexWorker(n, conc int) Side {
	return workerSide("Model with remote lists", conc, a.listScenario(n))
}

// ModelWorker and ModelBatches: the entity model's own queue.
func (a *Account) ModelWorker(n, conc int) Side { return workerSide("Model", conc, a.modelScenario(n)) }

// ModelBatches: see ModelWorker.
func (a *Account) ModelBatches(n, conc int) Side {
	return batchesSide("Model", conc, a.modelScenario(n))
}
