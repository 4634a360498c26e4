package consistency_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/table"
)

// counting counts every request a client sends (retries included), and
// waits delay before each, as a network round trip would.
type counting struct {
	n     atomic.Int64
	delay time.Duration
}

func (c *counting) Do(req *policy.Request) (*http.Response, error) {
	c.n.Add(1)
	if c.delay > 0 {
		time.Sleep(c.delay)
	}
	return req.Next()
}

// benchRTT is the round trip BenchmarkMoveBatches adds to every request:
// TABLEKIT_BENCH_RTT (a Go duration, such as 5ms), or none. With one,
// the comparison measures the steps each way waits on in sequence rather
// than the CPU of a machine the service shares.
func benchRTT(b *testing.B) time.Duration {
	d, err := time.ParseDuration(os.Getenv("TABLEKIT_BENCH_RTT"))
	if err != nil && os.Getenv("TABLEKIT_BENCH_RTT") != "" {
		b.Fatalf("TABLEKIT_BENCH_RTT: %v", err)
	}
	return d
}

func (c *counting) opts() azcore.ClientOptions {
	return azcore.ClientOptions{PerRetryPolicies: []policy.Policy{c}}
}

// archiveSetup fills a table with n rows in one partition and returns
// clients (counted by c) for it, an empty archive and a fresh queue.
func archiveSetup(b *testing.B, cs string, n int, c *counting) (cur, arc *aztables.Client, q, poison *azqueue.QueueClient) {
	ctx := context.Background()
	svc, err := aztables.NewServiceClientFromConnectionString(cs, &aztables.ClientOptions{ClientOptions: c.opts()})
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{testenv.UniqueName("mbcur"), testenv.UniqueName("mbarc")} {
		if _, err := svc.CreateTable(ctx, name, nil); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _, _ = svc.DeleteTable(context.Background(), name, nil) })
		if cur == nil {
			cur = svc.NewClient(name)
		} else {
			arc = svc.NewClient(name)
		}
	}
	var queues []*azqueue.QueueClient
	for _, name := range []string{testenv.UniqueName("mbq"), testenv.UniqueName("mbp")} {
		qc, err := azqueue.NewQueueClientFromConnectionString(cs, strings.ToLower(name), &azqueue.ClientOptions{ClientOptions: c.opts()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := qc.Create(ctx, nil); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _, _ = qc.Delete(context.Background(), nil) })
		queues = append(queues, qc)
	}
	var ops []batch.Op
	for i := range n {
		ops = append(ops, batch.Add(&employee{Meta: table.Meta{PartitionKey: "p00", RowKey: keyrules.Uint64(uint64(i))}, Name: fmt.Sprintf("employee %d", i)}))
	}
	if _, err := batch.NewWriter(cur, nil).Write(ctx, slices.Values(ops), nil); err != nil {
		b.Fatal(err)
	}
	return cur, arc, queues[0], queues[1]
}

// BenchmarkMoveBatches compares, on Azurite at equal concurrency, the
// batched mover (Mover.ProcessBatch on a Worker) with a hand-written queue
// loop (conc goroutines, each
// dequeuing 32 and, per message, reading, upserting, deleting the source
// and the message: internal/benchkit's ArchiveHand) and with the
// per-message Mover on a Worker. Run with -benchtime 1x; the figures are
// from a shared machine.
func BenchmarkMoveBatches(b *testing.B) {
	cs := testenv.ConnectionString(b)
	const n = 320
	for _, conc := range []int{1, 8} {
		for _, side := range []string{"hand loop", "Mover on a Worker", "Mover.ProcessBatch on a Worker"} {
			b.Run(fmt.Sprintf("%s/concurrency=%d", side, conc), func(b *testing.B) {
				var elapsed time.Duration
				var requests int64
				for b.Loop() {
					b.StopTimer()
					c := &counting{}
					cur, arc, q, poison := archiveSetup(b, cs, n, c)
					c.delay = benchRTT(b)
					ctx := context.Background()
					current, _ := table.New[employee](cur, nil)
					archive, _ := table.New[employee](arc, nil)
					mover := consistency.NewMover[employee](current, archive, consistency.NewSender(q, nil), nil)
					for i := range n {
						var err error
						if side == "hand loop" {
							_, err = q.EnqueueMessage(ctx, "p00,"+keyrules.Uint64(uint64(i)), nil)
						} else {
							err = mover.Request(ctx, "p00", keyrules.Uint64(uint64(i)), nil)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					before := c.n.Load()
					b.StartTimer()
					start := time.Now()
					var err error
					switch side {
					case "hand loop":
						err = handLoop(ctx, cur, arc, q, conc)
					case "Mover on a Worker":
						w := consistency.NewWorker(q, poison, &consistency.WorkerOptions{Concurrency: conc})
						_ = w.Handle(mover.MessageType(), mover.Process)
						_, err = w.Drain(ctx, nil)
					default:
						w := consistency.NewWorker(q, poison, &consistency.WorkerOptions{Concurrency: conc})
						_ = w.HandleBatch(mover.MessageType(), mover.ProcessBatch)
						_, err = w.Drain(ctx, nil)
					}
					elapsed += time.Since(start)
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					requests += c.n.Load() - before
					left, err := seqs.Collect(current.Query(ctx, nil))
					if err != nil || len(left) != 0 {
						b.Fatalf("%d not moved (%v)", len(left), err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "msgs/s")
				b.ReportMetric(float64(requests)/float64(n*b.N), "req/msg")
			})
		}
	}
}

// handLoop is internal/benchkit's ArchiveHand: what a careful user writes
// over the SDK alone.
func handLoop(ctx context.Context, cur, arc *aztables.Client, q *azqueue.QueueClient, conc int) error {
	errs := make(chan error, conc)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				resp, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(32)), VisibilityTimeout: to.Ptr(int32(60))})
				if err != nil {
					errs <- err
					return
				}
				if len(resp.Messages) == 0 {
					return
				}
				for _, m := range resp.Messages {
					pk, rk, _ := strings.Cut(*m.MessageText, ",")
					got, err := cur.GetEntity(ctx, pk, rk, nil)
					if err == nil {
						_, err = arc.UpsertEntity(ctx, got.Value, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
					}
					if err == nil {
						_, err = cur.DeleteEntity(ctx, pk, rk, nil)
					}
					if err == nil {
						_, err = q.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// TestWorkerRunsTheBatchedMover: a Worker running the Mover's ProcessBatch
// moves what arrives while it waits on an empty queue, and returns nil
// when its context ends. In virtual time: the fakes' clocks are time.Now.
func TestWorkerRunsTheBatchedMover(t *testing.T) { synctest.Test(t, runBatchedMover) }

func runBatchedMover(t *testing.T) {
	ctx := t.Context()
	tables, queues := fake.NewTableService(nil), fake.NewQueueService(nil)
	cur, arc := tables.NewClient("current", nil), tables.NewClient("archive", nil)
	q, poison := queues.NewQueueClient("moves", nil), queues.NewQueueClient("poison", nil)
	for _, c := range []*aztables.Client{cur, arc} {
		if _, err := c.CreateTable(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*azqueue.QueueClient{q, poison} {
		if _, err := c.Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	current, _ := table.New[employee](cur, nil)
	archive, _ := table.New[employee](arc, nil)
	mover := consistency.NewMover[employee](current, archive, consistency.NewSender(q, nil), nil)
	w := consistency.NewWorker(q, poison, &consistency.WorkerOptions{PollInterval: 5 * time.Millisecond, MaxPollInterval: 20 * time.Millisecond})
	if err := w.HandleBatch(mover.MessageType(), mover.ProcessBatch); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx, nil) }()
	for burst := range 2 {
		for i := range 40 {
			e := &employee{Meta: table.Meta{PartitionKey: "p", RowKey: fmt.Sprintf("%d-%02d", burst, i)}}
			if err := current.Add(ctx, e, nil); err != nil {
				t.Fatal(err)
			}
			if err := mover.RequestValue(ctx, e, nil); err != nil {
				t.Fatal(err)
			}
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			left, err := seqs.Collect(current.Query(ctx, nil))
			if err != nil {
				t.Fatal(err)
			}
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("burst %d: %d not moved", burst, len(left))
			}
		}
	}
	stop()
	err := <-done
	st := w.Stats()
	if err != nil || st.Processed != 80 || st.Poisoned != 0 || st.Batches == 0 {
		t.Fatalf("Run: %+v, %v", st, err)
	}
	moved, err := seqs.Collect(archive.Query(ctx, nil))
	if err != nil || len(moved) != 80 {
		t.Fatalf("%d archived (%v)", len(moved), err)
	}
}
