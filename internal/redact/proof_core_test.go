package redact_test

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/consistency/blobstore"
	"github.com/tablekit/tablekit/consistency/ownership"
	"github.com/tablekit/tablekit/eventstream"
	"github.com/tablekit/tablekit/internal/poisonq"
	"github.com/tablekit/tablekit/sas"
	"github.com/tablekit/tablekit/table"
)

// Emp is the entity every caller reads and writes.
type Emp struct {
	table.Meta
	Name  string
	Email string
	Bio   string
}

func emp() *Emp {
	return &Emp{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_000001"}, Name: "Ana", Email: "ana@contoso.com", Bio: "bio"}
}

// Event is an event of the event-stream callers.
type Event struct {
	eventstream.Event
	Kind string
}

func tbl(e *env) *table.Table[Emp] {
	t, err := table.New[Emp](e.tbl, &table.Options{Logger: e.log, TracingProvider: e.tp})
	if err != nil {
		panic(err)
	}
	return t
}

func worker(e *env) *consistency.Worker {
	return consistency.NewWorker(e.q, e.poison, &consistency.WorkerOptions{Logger: e.log, TracingProvider: e.tp,
		PollInterval: 10 * time.Millisecond, MaxPollInterval: 50 * time.Millisecond, ShutdownGrace: time.Second})
}

func mover(e *env) *consistency.Mover[Emp] {
	return consistency.NewMover[Emp](tbl(e), tbl(e), consistency.NewSender(e.q, nil), &consistency.MoverOptions{TracingProvider: e.tp})
}

func store(e *env) *eventstream.Store[Event] {
	s, err := eventstream.New[Event](e.tbl, &eventstream.Options{Logger: e.log, TracingProvider: e.tp})
	if err != nil {
		panic(err)
	}
	return s
}

func router(e *env) *accounts.Router {
	r, err := accounts.New([]accounts.Config{{Name: "a", Connect: func(o *aztables.ClientOptions) (*aztables.ServiceClient, error) { return e.svc, nil }}}, nil)
	if err != nil {
		panic(err)
	}
	return r
}

// short gives a call that runs until its context ends (Run) 300 ms.
func short(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 300*time.Millisecond)
}

func init() {
	register(map[string]caller{
		// table
		"table.Table.Get": func(ctx context.Context, e *env) error {
			_, err := tbl(e).Get(ctx, "Sales", "empid_1", nil)
			return err
		},
		"table.Table.Add": func(ctx context.Context, e *env) error { return tbl(e).Add(ctx, emp(), nil) },
		"table.Table.Upsert": func(ctx context.Context, e *env) error {
			return tbl(e).Upsert(ctx, emp(), nil)
		},
		"table.Table.Update": func(ctx context.Context, e *env) error {
			v := emp()
			v.ETag = "W/\"1\""
			return tbl(e).Update(ctx, v, nil)
		},
		"table.Table.Delete": func(ctx context.Context, e *env) error { return tbl(e).Delete(ctx, "Sales", "empid_1", nil) },
		"table.Table.DeleteValue": func(ctx context.Context, e *env) error {
			v := emp()
			v.ETag = "W/\"1\""
			return tbl(e).DeleteValue(ctx, v, nil)
		},
		"table.Table.Modify": func(ctx context.Context, e *env) error {
			_, err := tbl(e).Modify(ctx, "Sales", "empid_1", func(*Emp) error { return nil }, nil)
			return err
		},
		"table.Table.Query":     func(ctx context.Context, e *env) error { return first(tbl(e).Query(ctx, nil)) },
		"table.Table.QueryPage": func(ctx context.Context, e *env) error { _, err := tbl(e).QueryPage(ctx, "", nil); return err },
		"table.QueryAs":         func(ctx context.Context, e *env) error { return first(table.QueryAs[Emp](ctx, tbl(e), nil)) },
		"table.Registry.Query": func(ctx context.Context, e *env) error {
			r := table.NewRegistry(nil)
			_ = table.Register[Emp](r, "Emp")
			return first(r.Query(ctx, e.tbl, nil))
		},
		"table.RetryOnConflict": func(ctx context.Context, e *env) error {
			_, err := table.RetryOnConflict(ctx, func(int) error { _, err := tbl(e).Get(ctx, "Sales", "empid_1", nil); return err }, nil)
			return err
		},
		"table.LocalKeys.WrapKey": func(ctx context.Context, e *env) error {
			k := table.LocalKeys{"k": make([]byte, 32)}
			_, err := k.WrapKey(ctx, "k", make([]byte, 32))
			return err
		},
		"table.LocalKeys.UnwrapKey": func(ctx context.Context, e *env) error {
			k := table.LocalKeys{"k": make([]byte, 32)}
			_, err := k.UnwrapKey(ctx, "k", []byte("short"))
			return err
		},
		// Context helpers: they send nothing; called so that the table of
		// covered names is complete.
		"table.WithQueryStats": func(ctx context.Context, e *env) error {
			return first(tbl(e).Query(table.WithQueryStats(ctx, &table.QueryStats{}), nil))
		},

		// batch
		"batch.Submit": func(ctx context.Context, e *env) error {
			_, err := batch.Submit(ctx, e.tbl, []batch.Op{batch.Upsert(emp(), aztables.UpdateModeMerge)}, nil)
			return err
		},
		"batch.Transaction.Submit": func(ctx context.Context, e *env) error {
			tx := batch.NewTransaction(nil)
			if err := tx.Append(batch.Upsert(emp(), aztables.UpdateModeMerge)); err != nil {
				return err
			}
			_, err := tx.Submit(ctx, e.tbl, nil)
			return err
		},
		"batch.Writer.Write": func(ctx context.Context, e *env) error {
			_, err := batch.NewWriter(e.tbl, &batch.WriterOptions{Logger: e.log, TracingProvider: e.tp}).Write(ctx, slices.Values([]batch.Op{batch.Upsert(emp(), aztables.UpdateModeMerge)}), nil)
			return err
		},

		// consistency
		"consistency.Sender.Send": func(ctx context.Context, e *env) error {
			return consistency.NewSender(e.q, nil).Send(ctx, "proof.v1", "k", 1, nil)
		},
		"consistency.Sender.SendAround": func(ctx context.Context, e *env) error {
			return consistency.NewSender(e.q, nil).SendAround(ctx, "proof.v1", "k", 1, time.Second, func() error { return nil }, nil)
		},
		"consistency.Worker.Drain": func(ctx context.Context, e *env) error { _, err := worker(e).Drain(ctx, nil); return err },
		"consistency.Worker.Run": func(ctx context.Context, e *env) error {
			ctx, cancel := short(ctx)
			defer cancel()
			return worker(e).Run(ctx, nil)
		},
		"internal/poisonq.Queue.Peek": func(ctx context.Context, e *env) error {
			_, err := poisonq.New(e.poison, e.q).Peek(ctx, nil)
			return err
		},
		"internal/poisonq.Queue.Replay": func(ctx context.Context, e *env) error {
			_, err := poisonq.New(e.poison, e.q).Replay(ctx, nil)
			return err
		},
		"internal/poisonq.Queue.Purge": func(ctx context.Context, e *env) error {
			_, err := poisonq.New(e.poison, e.q).Purge(ctx, nil)
			return err
		},
		"consistency.Mover.Request": func(ctx context.Context, e *env) error { return mover(e).Request(ctx, "Sales", "empid_1", nil) },
		"consistency.Mover.RequestValue": func(ctx context.Context, e *env) error {
			v := emp()
			v.ETag = "W/\"1\""
			return mover(e).RequestValue(ctx, v, nil)
		},
		"consistency.Mover.Process": func(ctx context.Context, e *env) error {
			m := mover(e)
			payload := []byte(`{"pk":"Sales","rk":"empid_1","etag":"W/\"1\""}`)
			return m.Process(ctx, &consistency.Message{Type: m.MessageType(), Key: "k", Payload: payload})
		},
		"consistency.Mover.ProcessBatch": func(ctx context.Context, e *env) error {
			m := mover(e)
			payload := []byte(`{"pk":"Sales","rk":"empid_1","etag":"W/\"1\""}`)
			return errors.Join(m.ProcessBatch(ctx, []*consistency.Message{{Type: m.MessageType(), Key: "k", Payload: payload}})...)
		},
		"consistency.BlobTarget.Upsert": func(ctx context.Context, e *env) error {
			return (&consistency.BlobTarget[Emp]{Blobs: blobstore.New(e.blobs), Container: "proof"}).Upsert(ctx, emp(), nil)
		},
		"blobstore.Store.Put": func(ctx context.Context, e *env) error {
			return blobstore.New(e.blobs).Put(ctx, "proof", "b", []byte("x"))
		},
		"blobstore.Store.Get": func(ctx context.Context, e *env) error {
			_, err := blobstore.New(e.blobs).Get(ctx, "proof", "b")
			return err
		},
		"blobstore.Store.Delete": func(ctx context.Context, e *env) error {
			return blobstore.New(e.blobs).Delete(ctx, "proof", "b")
		},
		"ownership.Role.Run": func(ctx context.Context, e *env) error {
			r, err := ownership.NewRole(e.blobs, "leases", []ownership.OwnedQueue{{Name: "work", Queue: e.q, Poison: e.poison}},
				&ownership.RoleOptions{Logger: e.log, LeaseDuration: 15 * time.Second})
			if err != nil {
				return err
			}
			ctx, cancel := short(ctx)
			defer cancel()
			if err := r.Run(ctx, nil); err != nil {
				return err
			}
			// Run reports only handler failures; its lease failures are in
			// its logs, which the proof reads. Report the failure so the
			// count of failed calls is honest.
			return errors.New("ownership: the role could not take its leases (see its log)")
		},

		// eventstream
		"eventstream.Store.Open": func(ctx context.Context, e *env) error { _, err := store(e).Open(ctx, "s1", nil); return err },
		"eventstream.Store.Append": func(ctx context.Context, e *env) error {
			_, err := store(e).Append(ctx, eventstream.NewHead("s1"), []*Event{{Kind: "a"}}, nil)
			return err
		},
		"eventstream.Store.AppendFunc": func(ctx context.Context, e *env) error {
			_, err := store(e).AppendFunc(ctx, "s1", func(*eventstream.Head) ([]*Event, *eventstream.AppendOptions, error) {
				return []*Event{{Kind: "a"}}, nil, nil
			}, nil)
			return err
		},
		"eventstream.Store.ReadPage": func(ctx context.Context, e *env) error {
			_, err := store(e).ReadPage(ctx, "s1", 0, "", nil)
			return err
		},
		"eventstream.Store.Read": func(ctx context.Context, e *env) error { return first(store(e).Read(ctx, "s1", 0, nil)) },
		"eventstream.Store.LoadSnapshot": func(ctx context.Context, e *env) error {
			var snap struct {
				eventstream.Snapshot
				N int64
			}
			return store(e).LoadSnapshot(ctx, "s1", &snap, nil)
		},

		// sas
		"sas.Policies.List": func(ctx context.Context, e *env) error {
			_, err := sas.NewTablePolicies(e.tbl).List(ctx, nil)
			return err
		},
		"sas.Policies.Create": func(ctx context.Context, e *env) error {
			return sas.NewTablePolicies(e.tbl).Create(ctx, sas.Policy[sas.TablePermissions]{ID: "p1", Expiry: time.Now().Add(time.Hour), Permissions: sas.TablePermissions{Read: true}}, nil)
		},
		"sas.Policies.Revoke": func(ctx context.Context, e *env) error {
			_, err := sas.NewTablePolicies(e.tbl).Revoke(ctx, "p1", nil)
			return err
		},

		// accounts
		"accounts.Router.CreateTable": func(ctx context.Context, e *env) error { return router(e).CreateTable(ctx, "proof", nil) },
		"accounts.Router.Write": func(ctx context.Context, e *env) error {
			_, err := router(e).Write(ctx, "proof", slices.Values([]batch.Op{batch.Upsert(emp(), aztables.UpdateModeMerge)}), nil)
			return err
		},
		"accounts.Migration.MoveTable": func(ctx context.Context, e *env) error {
			m, err := accounts.NewMigration(router(e), router(e))
			if err != nil {
				return err
			}
			_, err = m.MoveTable(ctx, "proof", &accounts.MoveTableOptions{Logger: e.log})
			return err
		},
	})
}
