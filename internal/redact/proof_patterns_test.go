package redact_test

import (
	"context"
	"encoding/json"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/envelope"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

// The patterns' callers, in a file of their own: patterns/ is the package
// whose API moves most, and this file is where its new functions go.

func emailDefs() []patterns.IndexDef[Emp] {
	return []patterns.IndexDef[Emp]{{Name: "email", Prefix: "email_", Value: func(v *Emp) string { return v.Email }}}
}

func blobLog(e *env) *patterns.BlobLog {
	l, err := patterns.NewBlobLog(e.blobs, "proof", "log/", &patterns.BlobLogOptions{Logger: e.log, TracingProvider: e.tp})
	if err != nil {
		panic(err)
	}
	return l
}

func large(e *env) *patterns.LargeEntity[Emp] {
	l, err := patterns.NewLargeEntity[Emp](tableOf(table.New[Emp](e.tbl, &table.Options{Logger: e.log, TracingProvider: e.tp})), e.blobs, "proof", []string{"Bio"}, 1, nil)
	if err != nil {
		panic(err)
	}
	return l
}

func logTail(e *env) *patterns.LogTail[Emp] {
	l, err := patterns.NewLogTail[Emp](tableOf(table.New[Emp](e.tbl, nil)), nil)
	if err != nil {
		panic(err)
	}
	return l
}

func rolling(e *env) *patterns.RollingTables[Emp] {
	r, err := patterns.NewRollingTables[Emp](e.svc, "Logins", keys.Daily, nil)
	if err != nil {
		panic(err)
	}
	return r
}

func series(e *env) *patterns.DataSeries[int64] {
	d, err := patterns.NewDataSeries[int64](tableOf(table.New[table.Entity](e.tbl, nil)), "hour_", 24)
	if err != nil {
		panic(err)
	}
	return d
}

func wide(e *env) *patterns.WideEntity {
	return patterns.NewWideEntity(tableOf(table.New[table.Entity](e.tbl, &table.Options{Logger: e.log, TracingProvider: e.tp})))
}

func sharded(e *env) *patterns.Sharded[Emp] {
	s, err := patterns.NewSharded[Emp](tableOf(table.New[Emp](e.tbl, nil)), "shard", 4)
	if err != nil {
		panic(err)
	}
	return s
}

// Summary is the denormalised copy of the Denormalized caller.
type Summary struct {
	table.Meta
	Name string
}

func fakeQueue(ctx context.Context) *azqueue.QueueClient {
	q := fake.NewQueueService(nil).NewQueueClient("proof", nil)
	_, _ = q.Create(ctx, nil)
	return q
}

func fakeTable(ctx context.Context, e *env, name string) *aztables.Client {
	_, _ = e.fakeTables.NewServiceClient(nil).CreateTable(ctx, name, nil)
	return e.fakeTables.NewClient(name, nil)
}

// dequeue waits for the queue's first message (a Put's message shows
// after its publish delay) and returns it as the Worker hands it over.
func dequeue(ctx context.Context, q *azqueue.QueueClient) (*consistency.Message, error) {
	for ctx.Err() == nil {
		resp, err := q.DequeueMessage(ctx, nil)
		if err != nil {
			return nil, err
		}
		if len(resp.Messages) == 1 {
			var env envelope.Envelope
			if err := json.Unmarshal([]byte(*resp.Messages[0].MessageText), &env); err != nil {
				return nil, err
			}
			return &consistency.Message{Type: env.Type, Key: env.Key, Enqueued: env.Enqueued, Payload: env.Payload,
				LastError: env.LastError, ID: *resp.Messages[0].MessageID, DequeueCount: *resp.Messages[0].DequeueCount}, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, ctx.Err()
}

func init() {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	register(map[string]caller{
		"patterns.BlobLog.Append": func(ctx context.Context, e *env) error {
			l := blobLog(e)
			if err := l.Append(ctx, "line", nil); err != nil {
				return err
			}
			return l.Flush(ctx, nil)
		},
		"patterns.BlobLog.AppendAt": func(ctx context.Context, e *env) error {
			l := blobLog(e)
			if err := l.AppendAt(ctx, at, "line", nil); err != nil {
				return err
			}
			return l.Close(ctx, nil)
		},
		"patterns.BlobLog.Flush": func(ctx context.Context, e *env) error {
			l := blobLog(e)
			_ = l.AppendAt(ctx, at, "line", nil)
			return l.Flush(ctx, nil)
		},
		"patterns.BlobLog.Close": func(ctx context.Context, e *env) error {
			l := blobLog(e)
			_ = l.AppendAt(ctx, at, "line", nil)
			return l.Close(ctx, nil)
		},
		"patterns.BlobLog.Run": func(ctx context.Context, e *env) error {
			l := blobLog(e)
			_ = l.AppendAt(ctx, at, "line", nil)
			ctx, cancel := short(ctx)
			defer cancel()
			return l.Run(ctx, nil)
		},
		"patterns.BlobLog.Read": func(ctx context.Context, e *env) error {
			return first(blobLog(e).Read(ctx, at, at.Add(time.Hour), nil))
		},

		"patterns.LargeEntity.Put": func(ctx context.Context, e *env) error { return large(e).Put(ctx, emp(), nil) },
		"patterns.LargeEntity.Update": func(ctx context.Context, e *env) error {
			v := emp()
			v.ETag = "W/\"1\""
			return large(e).Update(ctx, v, nil)
		},
		"patterns.LargeEntity.Modify": func(ctx context.Context, e *env) error {
			_, err := large(e).Modify(ctx, "Sales", "empid_000001", func(*Emp) error { return nil }, nil)
			return err
		},
		"patterns.LargeEntity.Get": func(ctx context.Context, e *env) error {
			_, err := large(e).Get(ctx, "Sales", "empid_000001", nil)
			return err
		},
		"patterns.LargeEntity.GetLazy": func(ctx context.Context, e *env) error {
			_, _, err := large(e).GetLazy(ctx, "Sales", "empid_000001", nil)
			return err
		},
		"patterns.LargeEntity.Delete": func(ctx context.Context, e *env) error {
			return large(e).Delete(ctx, "Sales", "empid_000001", nil)
		},
		"patterns.LargeEntity.Sweep": func(ctx context.Context, e *env) error {
			_, err := large(e).Sweep(ctx, patterns.MinSweepGrace, nil)
			return err
		},
		"patterns.Lazy.Load": func(ctx context.Context, e *env) error {
			// The entity is read from a working table; its blob from the
			// failing store.
			c := fakeTable(ctx, e, "prooflarge")
			fb := e.fakeBlobs.NewClient(nil)
			_, _ = fb.CreateContainer(ctx, "proof", nil)
			good, err := patterns.NewLargeEntity[Emp](tableOf(table.New[Emp](c, nil)), fb, "proof", []string{"Bio"}, 1, nil)
			if err != nil {
				return err
			}
			if err := good.Put(ctx, emp(), nil); err != nil {
				return err
			}
			bad, err := patterns.NewLargeEntity[Emp](tableOf(table.New[Emp](c, &table.Options{Logger: e.log, TracingProvider: e.tp})), e.blobs, "proof", []string{"Bio"}, 1, nil)
			if err != nil {
				return err
			}
			_, lazy, err := bad.GetLazy(ctx, "Sales", "empid_000001", nil)
			if err != nil {
				return err
			}
			return lazy.Load(ctx, "Bio", nil)
		},

		"patterns.LogTail.Append": func(ctx context.Context, e *env) error { return logTail(e).Append(ctx, "Sales", emp(), nil) },
		"patterns.LogTail.AppendAt": func(ctx context.Context, e *env) error {
			return logTail(e).AppendAt(ctx, "Sales", at, emp(), nil)
		},
		"patterns.LogTail.Latest": func(ctx context.Context, e *env) error {
			_, err := logTail(e).Latest(ctx, "Sales", 5, nil)
			return err
		},
		"patterns.LogTail.Between": func(ctx context.Context, e *env) error {
			return first(logTail(e).Between(ctx, "Sales", at, at.Add(time.Hour), nil))
		},
		"patterns.LogTail.Since": func(ctx context.Context, e *env) error {
			return first(logTail(e).Since(ctx, "Sales", at, nil))
		},

		"patterns.RollingTables.Precreate": func(ctx context.Context, e *env) error { _, err := rolling(e).Precreate(ctx, 2, nil); return err },
		"patterns.RollingTables.TableFor": func(ctx context.Context, e *env) error {
			_, err := rolling(e).TableFor(ctx, at, nil)
			return err
		},
		"patterns.RollingTables.Add": func(ctx context.Context, e *env) error { return rolling(e).Add(ctx, at, emp(), nil) },
		"patterns.RollingTables.Query": func(ctx context.Context, e *env) error {
			return first(rolling(e).Query(ctx, at, at.Add(time.Hour), nil))
		},
		"patterns.RollingTables.Expire": func(ctx context.Context, e *env) error { _, err := rolling(e).Expire(ctx, nil); return err },

		"patterns.DataSeries.Set": func(ctx context.Context, e *env) error {
			_, err := series(e).Set(ctx, "Sales", "s1", 3, 7, nil)
			return err
		},
		"patterns.DataSeries.SetMany": func(ctx context.Context, e *env) error {
			_, err := series(e).SetMany(ctx, "Sales", "s1", map[int]int64{1: 1, 2: 2}, nil)
			return err
		},
		"patterns.DataSeries.Get": func(ctx context.Context, e *env) error {
			_, _, err := series(e).Get(ctx, "Sales", "s1", nil)
			return err
		},

		"patterns.Denormalized.Update": func(ctx context.Context, e *env) error {
			d, err := patterns.NewDenormalized[Emp, Summary](tableOf(table.New[Emp](e.tbl, nil)), tableOf(table.New[Summary](e.tbl, nil)), []string{"Name"}, func(s *Emp, d *Summary) { d.Name = s.Name })
			if err != nil {
				return err
			}
			return d.Update(ctx, emp(), []string{"summary_1"}, nil)
		},

		"patterns.ReferenceCache.Get": func(ctx context.Context, e *env) error {
			_, _, err := patterns.NewReferenceCache[Emp](tbl(e), nil).Get(ctx, "Sales", "empid_000001", nil)
			return err
		},
		"patterns.ReferenceCache.All": func(ctx context.Context, e *env) error {
			_, err := patterns.NewReferenceCache[Emp](tbl(e), nil).All(ctx, nil)
			return err
		},

		"patterns.Sharded.Append": func(ctx context.Context, e *env) error { return sharded(e).Append(ctx, "k", emp(), nil) },
		"patterns.Sharded.Read":   func(ctx context.Context, e *env) error { return first(sharded(e).Read(ctx, nil)) },

		"patterns.WideEntity.Put": func(ctx context.Context, e *env) error {
			return wide(e).Put(ctx, &patterns.Wide{PartitionKey: "Sales", RowKey: "w1", Properties: map[string]any{"A": "x"}}, nil)
		},
		"patterns.WideEntity.Add": func(ctx context.Context, e *env) error {
			return wide(e).Add(ctx, &patterns.Wide{PartitionKey: "Sales", RowKey: "w2", Properties: map[string]any{"A": "x"}}, &table.AddOptions{Idempotent: true})
		},
		"patterns.WideEntity.Get": func(ctx context.Context, e *env) error {
			_, err := wide(e).Get(ctx, "Sales", "w1", false, nil)
			return err
		},
		"patterns.WideEntity.Delete": func(ctx context.Context, e *env) error { return wide(e).Delete(ctx, "Sales", "w1", nil) },
	})
}
