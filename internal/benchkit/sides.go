package benchkit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/table"
)

// HandRow is Row as a careful hand-written program declares it for
// encoding/json: the Int64 as a string with its annotation beside it.
type HandRow struct {
	PartitionKey string
	RowKey       string
	Payload      string
	NType        string `json:"N@odata.type,omitempty"`
	N            int64  `json:"N,string"`
}

// Encoding is how hand-written code turns a Row into JSON.
type Encoding int

const (
	// EncodeEDM is the SDK's documented way: an aztables.EDMEntity with a
	// map of properties, through encoding/json.
	EncodeEDM Encoding = iota
	// EncodeStruct is a struct with the annotations as fields, through
	// encoding/json: the cheapest hand-written encoding.
	EncodeStruct
)

// String is the encoding's name in the benchmark tables.
func (e Encoding) String() string {
	if e == EncodeStruct {
		return "struct+json"
	}
	return "EDMEntity+json"
}

func (e Encoding) marshal(r *Row) ([]byte, error) {
	if e == EncodeStruct {
		return json.Marshal(HandRow{PartitionKey: r.PartitionKey, RowKey: r.RowKey, Payload: r.Payload, NType: "Edm.Int64", N: int64(r.N)})
	}
	return json.Marshal(aztables.EDMEntity{
		Entity:     aztables.Entity{PartitionKey: r.PartitionKey, RowKey: r.RowKey},
		Properties: map[string]any{"Payload": r.Payload, "N": aztables.EDMInt64(r.N)},
	})
}

// byPartition spreads rows' partitions over conc goroutines and calls f for
// each partition's rows, one partition at a time per goroutine: the same
// schedule the Writer keeps (one transaction in flight per partition).
func byPartition(ctx context.Context, rows []*Row, conc int, f func(ctx context.Context, rows []*Row) error) error {
	parts := map[string][]*Row{}
	var order []string
	for _, r := range rows {
		if _, ok := parts[r.PartitionKey]; !ok {
			order = append(order, r.PartitionKey)
		}
		parts[r.PartitionKey] = append(parts[r.PartitionKey], r)
	}
	errs := make(chan error, conc)
	next := make(chan string)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pk := range next {
				if err := f(ctx, parts[pk]); err != nil {
					errs <- err
					for range next {
					}
					return
				}
			}
		}()
	}
	for _, pk := range order {
		next <- pk
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// tableRound makes a fresh table per round, filled by fill (untimed).
func (a *Account) tableRound(ctx context.Context, base string, fill func(*aztables.Client) error) (*aztables.Client, func(), error) {
	client, drop, err := a.NewTable(ctx, base)
	if err != nil {
		return nil, nil, err
	}
	if fill != nil {
		if err := fill(client); err != nil {
			drop()
			return nil, nil, err
		}
	}
	return client, drop, nil
}

// PerEntity adds n rows over parts partitions with one AddEntity each, conc
// at a time, encoded as enc: the naive bulk load.
func (a *Account) PerEntity(n, parts, conc int, enc Encoding) Side {
	return Side{Name: fmt.Sprintf("AddEntity each (%v), %d at a time", enc, conc), Round: func(ctx context.Context) (func(context.Context) (int, error), func(), error) {
		client, drop, err := a.tableRound(ctx, "benchadd", nil)
		if err != nil {
			return nil, nil, err
		}
		rows := Rows(n, parts)
		return func(ctx context.Context) (int, error) {
			return n, byPartition(ctx, rows, conc, func(ctx context.Context, rows []*Row) error {
				for _, r := range rows {
					body, err := enc.marshal(r)
					if err != nil {
						return err
					}
					if _, err := client.AddEntity(ctx, body, nil); err != nil {
						return err
					}
				}
				return nil
			})
		}, drop, nil
	}}
}

// HandTransactions adds n rows over parts partitions in transactions of
// 100 through SubmitTransaction, conc partitions at a time, encoded as
// enc: the careful hand-written bulk load.
func (a *Account) HandTransactions(n, parts, conc int, enc Encoding) Side {
	return Side{Name: fmt.Sprintf("SubmitTransaction loop (%v), %d at a time", enc, conc), Round: func(ctx context.Context) (func(context.Context) (int, error), func(), error) {
		client, drop, err := a.tableRound(ctx, "benchhand", nil)
		if err != nil {
			return nil, nil, err
		}
		rows := Rows(n, parts)
		return func(ctx context.Context) (int, error) {
			return n, byPartition(ctx, rows, conc, func(ctx context.Context, rows []*Row) error {
				for i := 0; i < len(rows); i += 100 {
					var acts []aztables.TransactionAction
					for _, r := range rows[i:min(i+100, len(rows))] {
						body, err := enc.marshal(r)
						if err != nil {
							return err
						}
						acts = append(acts, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: body})
					}
					if _, err := client.SubmitTransaction(ctx, acts, nil); err != nil {
						return err
					}
				}
				return nil
			})
		}, drop, nil
	}}
}

// Writer adds n rows over parts partitions with batch.Writer at the given
// parallelism, on a client built as the README shows (the default path).
func (a *Account) Writer(n, parts, parallelism int) Side {
	return a.writer(n, parts, parallelism, false)
}

// WriterFallback is Writer on a client without tablekit's policy: the
// SDK's SubmitTransaction.
func (a *Account) WriterFallback(n, parts, parallelism int) Side {
	return a.writer(n, parts, parallelism, true)
}

func (a *Account) writer(n, parts, parallelism int, fallback bool) Side {
	name := fmt.Sprintf("batch.Writer, parallelism %d", parallelism)
	if fallback {
		name += ", client without tablekit's policy"
	}
	return Side{Name: name, Round: func(ctx context.Context) (func(context.Context) (int, error), func(), error) {
		tname, client, drop, err := a.newTable(ctx, "benchwriter")
		if err != nil {
			return nil, nil, err
		}
		if !fallback {
			client = a.KitClient(tname)
		}
		rows := Rows(n, parts)
		return func(ctx context.Context) (int, error) {
			ops := make([]batch.Op, len(rows))
			for i, r := range rows {
				ops[i] = batch.Add(r)
			}
			sum, err := batch.NewWriter(client, &batch.WriterOptions{Parallelism: parallelism}).Write(ctx, slices.Values(ops), nil)
			if err == nil && sum.Operations != n {
				err = fmt.Errorf("wrote %d of %d", sum.Operations, n)
			}
			return n, err
		}, drop, nil
	}}
}

// filledVia is filled, read through a client built as the README shows
// unless fallback is set (then a plain aztables client).
func (a *Account) filledVia(ctx context.Context, base string, n int, fallback bool) (*aztables.Client, func(), error) {
	name, client, drop, err := a.newTable(ctx, base)
	if err != nil {
		return nil, nil, err
	}
	if err := LoadWriter(ctx, client, Rows(n, 1), 8); err != nil {
		drop()
		return nil, nil, err
	}
	if !fallback {
		client = a.KitClient(name)
	}
	return client, drop, nil
}

// filled is a round's table holding n rows in one partition, p00.
func (a *Account) filled(ctx context.Context, base string, n int) (*aztables.Client, func(), error) {
	return a.tableRound(ctx, base, func(c *aztables.Client) error { return LoadWriter(ctx, c, Rows(n, 1), 8) })
}

// QueryRaw reads a partition of n rows with the SDK's pager and
// encoding/json into HandRow.
func (a *Account) QueryRaw(n int) Side {
	return Side{Name: "ListEntities pager + encoding/json", Round: func(ctx context.Context) (func(context.Context) (int, error), func(), error) {
		client, drop, err := a.filled(ctx, "benchqraw", n)
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context) (int, error) {
			got := 0
			pager := client.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to.Ptr("PartitionKey eq 'p00'")})
			for pager.More() {
				page, err := pager.NextPage(ctx)
				if err != nil {
					return 0, err
				}
				for _, e := range page.Entities {
					var r HandRow
					if err := json.Unmarshal(e, &r); err != nil {
						return 0, err
					}
					got++
				}
			}
			return got, nil
		}, drop, nil
	}}
}

// QueryTablekit reads a partition of n rows with table.Query, on a
// client built as the README shows; fallback: on a client without
// tablekit's policy.
func (a *Account) QueryTablekit(n int, fallback bool) Side {
	name := "table.Query"
	if fallback {
		name += ", client without tablekit's policy"
	}
	return Side{Name: name, Round: func(ctx context.Context) (func(context.Context) (int, error), func(), error) {
		client, drop, err := a.filledVia(ctx, "benchq", n, fallback)
		if err != nil {
			return nil, nil, err
		}
		tb, err := table.New[Row](client, nil)
		if err != nil {
			drop()
			return nil, nil, err
		}
		return func(ctx context.Context) (int, error) {
			got := 0
			for _, err := range tb.Query(ctx, &table.QueryOptions{Filter: table.Partition("p00")}) {
				if err != nil {
					return 0, err
				}
				got++
			}
			return got, nil
		}, drop, nil
	}}
}

// archiveRound is one round of the archive scenario: n rows in Current,
// one queue message per row (its keys), an empty Archive.
type archiveRound struct {
	cur, arc *aztables.Client
	// kitCur, kitArc are clients of the same tables built as the README
	// shows: tablekit's sides use them.
	kitCur, kitArc *aztables.Client
	q              *azqueue.QueueClient
	cleanup        func()
}

func (a *Account) archiveRound(ctx context.Context, n int, enqueue func(q *azqueue.QueueClient, cur *aztables.Client, rk string) error) (*archiveRound, error) {
	curName, cur, dropCur, err := a.newTable(ctx, "benchcur")
	if err != nil {
		return nil, err
	}
	if err := LoadWriter(ctx, cur, Rows(n, 1), 8); err != nil {
		dropCur()
		return nil, err
	}
	arcName, arc, dropArc, err := a.newTable(ctx, "bencharc")
	if err != nil {
		dropCur()
		return nil, err
	}
	name := "benchq" + nowNano()
	q, err := azqueue.NewQueueClientFromConnectionString(a.Conn, name, a.QueueOptions())
	if err == nil {
		_, err = q.Create(ctx, nil)
	}
	r := &archiveRound{cur: cur, arc: arc, kitCur: a.KitClient(curName), kitArc: a.KitClient(arcName), q: q, cleanup: func() {
		dropCur()
		dropArc()
		if q != nil {
			_, _ = q.Delete(context.Background(), nil)
		}
	}}
	for i := 0; err == nil && i < n; i++ {
		err = enqueue(q, cur, keyrules.Uint64(uint64(i)))
	}
	if err != nil {
		r.cleanup()
		return nil, err
	}
	return r, nil
}

// ArchiveHand moves n rows Current → Archive as a hand-written worker would:
// conc goroutines, each dequeuing up to 32 messages and, for each, reading
// the source, upserting the copy, deleting the source and the message.
func (a *Account) ArchiveHand(n, conc int) Side {
	return Side{Name: fmt.Sprintf("hand-written queue loop, %d at a time", conc), Round: func(ctx context.Context) (func(context.Context) (int, error), func(), error) {
		r, err := a.archiveRound(ctx, n, func(q *azqueue.QueueClient, _ *aztables.Client, rk string) error {
			_, err := q.EnqueueMessage(ctx, "p00,"+rk, nil)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context) (int, error) {
			var mu sync.Mutex
			moved := 0
			errs := make(chan error, conc)
			var wg sync.WaitGroup
			for range conc {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						resp, err := r.q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(32)), VisibilityTimeout: to.Ptr(int32(60))})
						if err != nil {
							errs <- err
							return
						}
						if len(resp.Messages) == 0 {
							return
						}
						for _, m := range resp.Messages {
							pk, rk, _ := strings.Cut(*m.MessageText, ",")
							got, err := r.cur.GetEntity(ctx, pk, rk, nil)
							if err == nil {
								_, err = r.arc.UpsertEntity(ctx, got.Value, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
							}
							if err == nil {
								_, err = r.cur.DeleteEntity(ctx, pk, rk, nil)
							}
							if err == nil {
								_, err = r.q.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil)
							}
							if err != nil {
								errs <- err
								return
							}
							mu.Lock()
							moved++
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			select {
			case err := <-errs:
				return 0, err
			default:
			}
			return moved, nil
		}, r.cleanup, nil
	}}
}

// ArchiveBatches moves n rows Current → Archive with Mover.ProcessBatch
// registered with HandleBatch on a Worker of concurrency conc: 32 messages
// a dequeue, one transaction per partition.
func (a *Account) ArchiveBatches(n, conc int) Side {
	return Side{Name: fmt.Sprintf("Mover.ProcessBatch on a Worker, concurrency %d", conc), Round: func(ctx context.Context) (func(context.Context) (int, error), func(), error) {
		r, err := a.archiveRound(ctx, n, func(*azqueue.QueueClient, *aztables.Client, string) error { return nil })
		if err != nil {
			return nil, nil, err
		}
		current, err := table.New[Row](r.kitCur, nil)
		if err == nil {
			var archive *table.Table[Row]
			if archive, err = table.New[Row](r.kitArc, nil); err == nil {
				mover := consistency.NewMover[Row](current, archive, consistency.NewSender(r.q, nil), nil)
				for i := 0; err == nil && i < n; i++ {
					err = mover.Request(ctx, "p00", keyrules.Uint64(uint64(i)), nil)
				}
				var poison *azqueue.QueueClient
				if err == nil {
					poison, err = azqueue.NewQueueClientFromConnectionString(a.Conn, "benchp"+nowNano(), nil)
				}
				if err == nil {
					_, err = poison.Create(ctx, nil)
				}
				if err == nil {
					w := consistency.NewWorker(r.q, poison, &consistency.WorkerOptions{Concurrency: conc})
					_ = w.HandleBatch(mover.MessageType(), mover.ProcessBatch)
					cleanup := func() { r.cleanup(); _, _ = poison.Delete(context.Background(), nil) }
					return func(ctx context.Context) (int, error) {
						st, err := w.Drain(ctx, nil)
						return int(st.Processed), err
					}, cleanup, nil
				}
			}
		}
		r.cleanup()
		return nil, nil, err
	}}
}

// ArchiveMover moves n rows Current → Archive with consistency.Mover on one
// Worker of the given concurrency.
func (a *Account) ArchiveMover(n, conc int) Side {
	return Side{Name: fmt.Sprintf("consistency.Mover, concurrency %d", conc), Round: func(ctx context.Context) (func(context.Context) (int, error), func(), error) {
		// The Mover sends its own messages below, once it exists.
		r, err := a.archiveRound(ctx, n, func(*azqueue.QueueClient, *aztables.Client, string) error { return nil })
		if err != nil {
			return nil, nil, err
		}
		current, err := table.New[Row](r.kitCur, nil)
		if err != nil {
			r.cleanup()
			return nil, nil, err
		}
		archive, err := table.New[Row](r.kitArc, nil)
		if err != nil {
			r.cleanup()
			return nil, nil, err
		}
		mover := consistency.NewMover[Row](current, archive, consistency.NewSender(r.q, nil), nil)
		for i := range n {
			if err := mover.Request(ctx, "p00", keyrules.Uint64(uint64(i)), nil); err != nil {
				r.cleanup()
				return nil, nil, err
			}
		}
		poison, err := azqueue.NewQueueClientFromConnectionString(a.Conn, "benchp"+nowNano(), nil)
		if err == nil {
			_, err = poison.Create(ctx, nil)
		}
		if err != nil {
			r.cleanup()
			return nil, nil, err
		}
		w := consistency.NewWorker(r.q, poison, &consistency.WorkerOptions{Concurrency: conc})
		if err := w.Handle(mover.MessageType(), mover.Process); err != nil {
			r.cleanup()
			return nil, nil, err
		}
		cleanup := func() { r.cleanup(); _, _ = poison.Delete(context.Background(), nil) }
		return func(ctx context.Context) (int, error) {
			st, err := w.Drain(ctx, nil)
			if err != nil {
				return 0, err
			}
			return int(st.Processed), nil
		}, cleanup, nil
	}}
}

func nowNano() string { return strconv.FormatInt(time.Now().UnixNano(), 36) }
