package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/table"
)

// The model's batched handler in the crash matrix (a model with same-partition
// indexes and remote lists, and one with cross-partition copies): a Worker running
// Model.ProcessBatch dies before each of its requests (the dequeue, the
// reads, the transactions, each message's delete); a fresh process then
// drains the queue with the batched handler again, and the copies and
// lists are checked exactly. The changes were acknowledged
// before the handler ran (their messages are in the queue), so every
// boundary must end in the same state.

func init() { crashScenarios = append(crashScenarios, batchedCrashScenarios...) }

// crashBatchOpts: messages reappear a second after a death; the deaths
// and recoveries deliver them more often than a worker's default allows.
var crashBatchOpts = consistency.WorkerOptions{Visibility: time.Second, Concurrency: 1, MaxDequeues: 100}

// drainBatched runs handle until the queue is empty and nothing was
// poisoned; a message retried on the way (its work refused once) is
// delivered again after its back-off.
func drainBatched(t *testing.T, p *crashProc, handle func(ctx context.Context, q, poison consistency.Queue) error) {
	t.Helper()
	q := p.queue(p.names.Queue)
	for deadline := time.Now().Add(time.Minute); queueLen(t, q) > 0; time.Sleep(300 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the queue did not drain")
		}
		var rep *consistency.FailureReport
		if err := handle(t.Context(), q, p.queue(p.names.Poison)); err != nil && !(errors.As(err, &rep) && rep.Poisoned == 0) {
			t.Fatal(err)
		}
	}
	if n := queueLen(t, p.queue(p.names.Poison)); n != 0 {
		t.Fatalf("%d messages poisoned", n)
	}
}

// moverBatches drains a queue with the mover's ProcessBatch on a Worker.
func moverBatches(p *crashProc) func(ctx context.Context, q, poison consistency.Queue) error {
	m := moverOf(p)
	return func(ctx context.Context, q, poison consistency.Queue) error {
		w := consistency.NewWorker(q, poison, &crashBatchOpts)
		if err := w.HandleBatch(m.MessageType(), m.ProcessBatch); err != nil {
			return err
		}
		_, err := w.Drain(ctx, nil)
		return err
	}
}

// modelBatches drains a queue with the model's ProcessBatch on a Worker.
func crossBatches(p *crashProc) func(ctx context.Context, q, poison consistency.Queue) error {
	x := crossOf(p)
	return func(ctx context.Context, q, poison consistency.Queue) error {
		w := consistency.NewWorker(q, poison, &crashBatchOpts)
		if err := w.HandleBatch(x.MessageType(), x.ProcessBatch); err != nil {
			return err
		}
		_, err := w.Drain(ctx, nil)
		return err
	}
}

func modelBatches(p *crashProc) func(ctx context.Context, q, poison consistency.Queue) error {
	return func(ctx context.Context, q, poison consistency.Queue) error {
		m, err := modelOf(p)
		if err != nil {
			return err
		}
		w := consistency.NewWorker(q, poison, &crashBatchOpts)
		if err := w.HandleBatch(m.MessageType(), m.ProcessBatch); err != nil {
			return err
		}
		_, err = w.Drain(ctx, nil)
		return err
	}
}

// crossBatchWant is the index after the batched scenario's changes: Ann
// and Bo changed emails (Bo took Ann's old one), Cy was deleted, Di and
// Ed in Ops are new.
var crossBatchWant = []string{"email_Ops/di@contoso.com", "email_Ops/ed@contoso.com", "email_Sales/ann.lee@contoso.com", "email_Sales/ann@contoso.com"}

var batchedCrashScenarios = []crashScenario{{
	name: "model batched handle",
	ack:  0, // the changes were acknowledged before the handler ran
	setup: func(ctx context.Context, p *crashProc) error {
		m, err := modelOf(p)
		if err != nil {
			return err
		}
		for _, s := range []*Staff{staff("000001", "Ann", "Lee", "ann@contoso.com", 41), staff("000002", "Bo", "Lee", "bo@contoso.com", 30), staff("000003", "Cy", "Jones", "cy@contoso.com", 25)} {
			if err := m.Add(ctx, s, nil); err != nil {
				return err
			}
		}
		if err := modelBatches(p)(ctx, p.queue(p.names.Queue), p.queue(p.names.Poison)); err != nil {
			return err
		}
		// The changes whose messages the dying process handles: Ann
		// becomes a Hall, Cy leaves, Di joins as a Jones.
		if _, err := m.Modify(ctx, "Sales", "empid_000001", func(s *Staff) error {
			s.LastName, s.Email = "Hall", "ann.hall@contoso.com"
			return nil
		}, nil); err != nil {
			return err
		}
		if err := m.Delete(ctx, "Sales", "empid_000003", nil); err != nil {
			return err
		}
		return m.Add(ctx, staff("000004", "Di", "Jones", "di@contoso.com", 28), nil)
	},
	run: func(ctx context.Context, p *crashProc) error {
		return modelBatches(p)(ctx, p.queue(p.names.Queue), p.queue(p.names.Poison))
	},
	recover: func(t *testing.T, p *crashProc) { drainBatched(t, p, modelBatches(p)) },
	check: func(t *testing.T, p *crashProc, acked bool) {
		checkModel(t, p, map[string]*Staff{
			"empid_000001": staff("000001", "Ann", "Hall", "ann.hall@contoso.com", 41),
			"empid_000002": staff("000002", "Bo", "Lee", "bo@contoso.com", 30),
			"empid_000004": staff("000004", "Di", "Jones", "di@contoso.com", 28),
		})
	},
}, {
	name: "inter-partition index batched handle",
	ack:  0, // the changes were acknowledged before the handler ran
	setup: func(ctx context.Context, p *crashProc) error {
		x := crossOf(p)
		ann, bo, cy := emp("Sales", "000001", "Ann", "Lee", "ann@contoso.com"), emp("Sales", "000002", "Bo", "Hall", "bo@contoso.com"), emp("Sales", "000003", "Cy", "Ng", "cy@contoso.com")
		for _, v := range []*Emp{ann, bo, cy} {
			if err := x.Upsert(ctx, v, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
				return err
			}
		}
		if err := crossBatches(p)(ctx, p.queue(p.names.Queue), p.queue(p.names.Poison)); err != nil {
			return err
		}
		// The changes whose messages the dying process handles.
		for _, v := range []*Emp{
			emp("Sales", "000001", "Ann", "Lee", "ann.lee@contoso.com"),
			emp("Sales", "000002", "Bo", "Hall", "ann@contoso.com"),
			emp("Ops", "000004", "Di", "Fox", "di@contoso.com"),
			emp("Ops", "000005", "Ed", "Orr", "ed@contoso.com"),
		} {
			if err := x.Upsert(ctx, v, &table.UpsertOptions{Mode: aztables.UpdateModeReplace}); err != nil {
				return err
			}
		}
		cur, err := x.Table().Get(ctx, cy.PartitionKey, cy.RowKey, nil)
		if err != nil {
			return err
		}
		return x.Delete(ctx, cur.PartitionKey, cur.RowKey, nil)
	},
	run: func(ctx context.Context, p *crashProc) error {
		return crossBatches(p)(ctx, p.queue(p.names.Queue), p.queue(p.names.Poison))
	},
	recover: func(t *testing.T, p *crashProc) { drainBatched(t, p, crossBatches(p)) },
	check: func(t *testing.T, p *crashProc, acked bool) {
		x := crossOf(p)
		checkCross(t, p, x, crossBatchWant)
		for email, id := range map[string]string{"ann.lee@contoso.com": "000001", "ann@contoso.com": "000002"} {
			got, err := x.Lookup(t.Context(), "email", "email_Sales", email, nil)
			if err != nil || got.RowKey != id {
				t.Fatalf("Lookup %s: %+v %v, want %s", email, got, err, id)
			}
		}
	},
}}
