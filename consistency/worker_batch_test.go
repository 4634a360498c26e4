package consistency_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	to2 "github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/ledger"
)

// countedQueues is queues whose work queue's requests c counts.
func countedQueues(t *testing.T, c *counting) (*fake.QueueService, *azqueue.QueueClient, *azqueue.QueueClient) {
	svc := fake.NewQueueService(nil)
	q := svc.NewQueueClient("work", &azqueue.ClientOptions{ClientOptions: c.opts()})
	p := svc.NewQueueClient("poison", nil)
	for _, cl := range []*azqueue.QueueClient{q, p} {
		if _, err := cl.Create(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	c.n.Store(0)
	return svc, q, p
}

func send(t *testing.T, q consistency.Queue, msgType string, keys ...string) {
	t.Helper()
	s := consistency.NewSender(q, nil)
	for _, k := range keys {
		if err := s.Send(t.Context(), msgType, k, k, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func keysOf(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

// TestHandleBatchGetsADequeuesMessagesTogether: the messages of a batched
// type that one dequeue returns reach its BatchHandler in one call, the
// other types' their Handler one at a time, every message once; a batched
// message costs its delete and its share of a dequeue of 32.
func TestHandleBatchGetsADequeuesMessagesTogether(t *testing.T) {
	c := &counting{}
	svc, q, p := countedQueues(t, c)
	send(t, q, "batch.v1", keysOf("b", 64)...)
	c.n.Store(0)
	w := consistency.NewWorker(q, p, nil)
	var mu sync.Mutex
	var sizes []int
	seen := map[string]int{}
	if err := w.HandleBatch("batch.v1", func(ctx context.Context, msgs []*consistency.Message) []error {
		mu.Lock()
		defer mu.Unlock()
		sizes = append(sizes, len(msgs))
		for _, m := range msgs {
			seen[m.Key]++
		}
		return make([]error, len(msgs))
	}); err != nil {
		t.Fatal(err)
	}
	st := drain(t, w)
	if len(sizes) != 2 || sizes[0] != 32 || sizes[1] != 32 || len(seen) != 64 || st.Processed != 64 || st.Batches != 2 || svc.Len("work") != 0 {
		t.Fatalf("batches %v, %d keys seen, stats %+v, %d left", sizes, len(seen), st, svc.Len("work"))
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%s handled %d times", k, n)
		}
	}
	// 64 deletes, two dequeues of 32, and the empty ones: one that found
	// the last batch's deletes still running, one after them.
	if got := c.n.Load(); got > 68 {
		t.Fatalf("%d requests for 64 batched messages, want at most 68", got)
	}

	// Mixed with a per-message type on the same queue.
	send(t, q, "batch.v1", keysOf("c", 20)...)
	send(t, q, "one.v1", keysOf("o", 5)...)
	var ones atomic.Int32
	if err := w.Handle("one.v1", func(ctx context.Context, m *consistency.Message) error { ones.Add(1); return nil }); err != nil {
		t.Fatal(err)
	}
	sizes = nil
	st = drain(t, w)
	if len(sizes) != 1 || sizes[0] != 20 || ones.Load() != 5 || st.Processed != 64+25 || svc.Len("work") != 0 {
		t.Fatalf("batches %v, %d single, stats %+v", sizes, ones.Load(), st)
	}
}

// TestBatchOutcomesAreEachMessagesOwn: of one batch, the message whose
// error is nil is deleted, the Permanent one poisoned, the one with
// another error and the one the handler gave no outcome retried, each with
// its error in LastError on its next delivery, where they succeed.
func TestBatchOutcomesAreEachMessagesOwn(t *testing.T) {
	svc, q, p := queues(t)
	send(t, q, "batch.v1", "ok", "bad", "later", "short")
	var mu sync.Mutex
	lastErr := map[string]string{}
	calls := 0
	w := consistency.NewWorker(q, p, &consistency.WorkerOptions{Backoff: func(int64) time.Duration { return 0 }, Logger: quiet})
	_ = w.HandleBatch("batch.v1", func(ctx context.Context, msgs []*consistency.Message) []error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		var errs []error
		for _, m := range msgs {
			if m.DequeueCount > 1 {
				lastErr[m.Key] = m.LastError
				errs = append(errs, nil)
				continue
			}
			switch m.Key {
			case "ok":
				errs = append(errs, nil)
			case "bad":
				errs = append(errs, consistency.Permanent(errors.New("never")))
			case "later":
				errs = append(errs, errors.New("not yet"))
			}
		}
		return errs // "short" has none when it is last
	})
	st, err := w.Drain(t.Context(), nil)
	var rep *consistency.FailureReport
	if !errors.As(err, &rep) || rep.Poisoned != 1 || rep.Retried < 1 {
		t.Fatalf("Drain: %v", err)
	}
	if st.Processed != 3 || st.Poisoned != 1 || svc.Len("work") != 0 || svc.Len("poison") != 1 {
		t.Fatalf("stats %+v; %d left, %d poisoned", st, svc.Len("work"), svc.Len("poison"))
	}
	if !strings.Contains(lastErr["later"], "not yet") || !strings.Contains(lastErr["short"], "no outcome") || len(lastErr) != 2 {
		t.Fatalf("last errors %q", lastErr)
	}
}

// TestBatchHandlerPanicFailsItsBatchOnly: a panicking BatchHandler fails
// its messages with a *PanicError, retried like any failure; the worker
// goes on and they succeed on their next delivery.
func TestBatchHandlerPanicFailsItsBatchOnly(t *testing.T) {
	svc, q, p := queues(t)
	send(t, q, "batch.v1", "a", "b")
	w := consistency.NewWorker(q, p, &consistency.WorkerOptions{Backoff: func(int64) time.Duration { return 0 }, Logger: quiet})
	_ = w.HandleBatch("batch.v1", func(ctx context.Context, msgs []*consistency.Message) []error {
		if msgs[0].DequeueCount == 1 {
			panic("boom")
		}
		return make([]error, len(msgs))
	})
	st, err := w.Drain(t.Context(), nil)
	var pe *consistency.PanicError
	if !errors.As(err, &pe) || st.Panicked != 2 || st.Processed != 2 || svc.Len("work") != 0 {
		t.Fatalf("stats %+v, err %v", st, err)
	}
}

// TestBatchedMessageOverMaxDequeuesIsPoisoned: a batched message that keeps
// failing reaches its BatchHandler MaxDequeues times, then goes to poison.
func TestBatchedMessageOverMaxDequeuesIsPoisoned(t *testing.T) {
	svc, q, p := queues(t)
	send(t, q, "batch.v1", "a")
	var calls atomic.Int32
	w := consistency.NewWorker(q, p, &consistency.WorkerOptions{MaxDequeues: 2, Backoff: func(int64) time.Duration { return 0 }, Logger: quiet})
	_ = w.HandleBatch("batch.v1", func(ctx context.Context, msgs []*consistency.Message) []error {
		calls.Add(1)
		return []error{errors.New("no")}
	})
	st, _ := w.Drain(t.Context(), nil)
	if calls.Load() != 2 || st.Poisoned != 1 || svc.Len("work") != 0 || svc.Len("poison") != 1 {
		t.Fatalf("%d calls, stats %+v", calls.Load(), st)
	}
}

// TestHandleBatchRefusesBadRegistrations: a type has one handler, per
// message or batched; a nil handler and a bad type are refused.
func TestHandleBatchRefusesBadRegistrations(t *testing.T) {
	_, q, p := queues(t)
	w := consistency.NewWorker(q, p, nil)
	ok := func(context.Context, []*consistency.Message) []error { return nil }
	if err := w.HandleBatch("noversion", ok); !errors.Is(err, consistency.ErrBadType) {
		t.Fatal(err)
	}
	if err := w.HandleBatch("x.v1", nil); !errors.Is(err, consistency.ErrNilHandler) {
		t.Fatal(err)
	}
	if err := w.Handle("x.v1", func(context.Context, *consistency.Message) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := w.HandleBatch("x.v1", ok); !errors.Is(err, consistency.ErrDuplicateHandler) {
		t.Fatalf("a batched handler beside x.v1's handler: %v", err)
	}
	if err := w.HandleBatch("y.v1", ok); err != nil {
		t.Fatal(err)
	}
	if err := w.Handle("y.v1", func(context.Context, *consistency.Message) error { return nil }); !errors.Is(err, consistency.ErrDuplicateHandler) {
		t.Fatalf("a handler beside y.v1's batched handler: %v", err)
	}
}

// TestLongBatchKeepsItsMessages: a BatchHandler that runs past the
// visibility keeps every message of its batch hidden by renewing each, so
// a second worker never gets them, and each is deleted with its newest
// receipt. Virtual time (synctest).
func TestLongBatchKeepsItsMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc, q, p := queues(t)
		send(t, q, "slow.v1", "a", "b", "c")
		var runs atomic.Int32
		slow := func(ctx context.Context, msgs []*consistency.Message) []error {
			runs.Add(int32(len(msgs)))
			time.Sleep(5 * time.Second) // 2.5 visibility timeouts
			return make([]error, len(msgs))
		}
		opts := func() *consistency.WorkerOptions {
			return &consistency.WorkerOptions{Visibility: 2 * time.Second, PollInterval: 50 * time.Millisecond, MaxPollInterval: 50 * time.Millisecond}
		}
		a, b := consistency.NewWorker(q, p, opts()), consistency.NewWorker(q, p, opts())
		_ = a.HandleBatch("slow.v1", slow)
		_ = b.HandleBatch("slow.v1", slow)
		runFor(t, 7*time.Second, a, b)
		sa, sb := a.Stats(), b.Stats()
		if runs.Load() != 3 || svc.Len("work") != 0 || sa.Processed+sb.Processed != 3 || sa.ClaimsLost+sb.ClaimsLost != 0 {
			t.Fatalf("handled %d times; %d messages left; stats %+v %+v", runs.Load(), svc.Len("work"), sa, sb)
		}
		if sa.Renewed+sb.Renewed < 6 {
			t.Fatalf("renewals: %d + %d, want two a message at least", sa.Renewed, sb.Renewed)
		}
	})
}

// TestTwoBatchedTypesKeepTheirBatchesFull: one queue carrying two batched
// types interleaved, 320 each, drained by a Worker of concurrency 8 whose
// handlers cost three table requests a call and every request a 2 ms
// round trip. A batch still gathering messages takes no handler slot, so
// a type's messages of the next dequeues join it until it is full: the
// ledger holds the drain,
// table requests included, to 1.25 requests a message (a delete each, a
// dequeue of 32 per 32, three table requests per batch of up to 32).
// Virtual time (synctest).
func TestTwoBatchedTypesKeepTheirBatchesFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, rtt = 320, 2 * time.Millisecond
		l := ledger.New()
		latency := &counting{delay: rtt}
		qo := &azqueue.ClientOptions{}
		l.Attach(&qo.ClientOptions, ledger.Queue)
		qo.PerRetryPolicies = append(qo.PerRetryPolicies, latency)
		qs := fake.NewQueueService(nil)
		q, p := qs.NewQueueClient("work", qo), qs.NewQueueClient("poison", nil)
		for _, c := range []*azqueue.QueueClient{q, p} {
			if _, err := c.Create(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
		}
		to := &aztables.ClientOptions{}
		l.Attach(&to.ClientOptions, ledger.Table)
		to.PerRetryPolicies = append(to.PerRetryPolicies, latency)
		tc := fake.NewTableService(nil).NewClient("work", to)
		if _, err := tc.CreateTable(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			send(t, q, "model.v1", fmt.Sprintf("m%03d", i))
			send(t, q, "move.v1", fmt.Sprintf("v%03d", i))
		}
		var mu sync.Mutex
		sizes := map[string][]int{}
		batched := func(ctx context.Context, msgs []*consistency.Message) []error {
			mu.Lock()
			sizes[msgs[0].Type] = append(sizes[msgs[0].Type], len(msgs))
			mu.Unlock()
			for range 3 {
				if _, err := tc.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: to2.Ptr("PartitionKey eq 'p'")}).NextPage(ctx); err != nil {
					return slices.Repeat([]error{err}, len(msgs))
				}
			}
			return make([]error, len(msgs))
		}
		w := consistency.NewWorker(q, p, &consistency.WorkerOptions{Concurrency: 8, Logger: quiet})
		for _, typ := range []string{"model.v1", "move.v1"} {
			if err := w.HandleBatch(typ, batched); err != nil {
				t.Fatal(err)
			}
		}
		l.Reset()
		st := drain(t, w)
		if st.Processed != 2*n || qs.Len("work") != 0 || st.Renewed != 0 {
			t.Fatalf("stats %+v, %d left", st, qs.Len("work"))
		}
		// Twenty batches of 32; twenty dequeues of 32, the empty one that
		// finds the last batches' deletes running and the one after them.
		table, dequeues := l.Operation(ledger.Table, "QueryEntities"), l.Operation(ledger.Queue, "DequeueMessages")
		per := float64(l.Total()) / (2 * n)
		if per > 1.25 || table > 3*2*n/32 || dequeues > 2*n/32+2 {
			t.Fatalf("%.3f requests a message (want at most 1.25), %d table requests (want %d: 3 a batch of 32), %d dequeues (want at most %d); batch sizes %v\n%s",
				per, table, 3*2*n/32, dequeues, 2*n/32+2, sizes, l)
		}
	})
}

// TestBatchCountsItsMessagesAgainstConcurrency: Concurrency bounds the
// messages handled at once, and a batch counts its messages (a batch of
// more than Concurrency counts Concurrency, so it runs alone). At the
// defaults (Concurrency 16, BatchSize 32) one full batch runs at a time
// and the worker holds one more; with Concurrency 64, two full batches run
// at once; with Concurrency 16 and batches of 8, two run at once. Handlers
// of a batched type sleep 1 s (virtual time), and the test records the most
// batch calls running at once and the most messages the worker held.
func TestBatchCountsItsMessagesAgainstConcurrency(t *testing.T) {
	cases := []struct {
		name                 string
		concurrency, batch   int
		wantRunning, maxHeld int
	}{
		{"defaults: one full batch at a time", 0, 0, 1, 64},
		{"Concurrency 64: two full batches", 64, 32, 2, 128},
		{"Concurrency 16, batches of 8: two at once", 16, 8, 2, 32 + 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc, q, p := queues(t)
				send(t, q, "batch.v1", keysOf("b", 256)...)
				var running, most atomic.Int32
				w := consistency.NewWorker(q, p, &consistency.WorkerOptions{Concurrency: tc.concurrency, BatchSize: tc.batch, Logger: quiet})
				if err := w.HandleBatch("batch.v1", func(ctx context.Context, msgs []*consistency.Message) []error {
					r := running.Add(1)
					for {
						m := most.Load()
						if r <= m || most.CompareAndSwap(m, r) {
							break
						}
					}
					time.Sleep(time.Second)
					running.Add(-1)
					return make([]error, len(msgs))
				}); err != nil {
					t.Fatal(err)
				}
				// Sample the messages the worker holds: dequeued, not yet settled.
				var maxHeld int
				stop := make(chan struct{})
				sampled := make(chan struct{})
				go func() {
					defer close(sampled)
					for {
						select {
						case <-stop:
							return
						case <-time.After(100 * time.Millisecond):
						}
						if st := w.Stats(); int(st.Dequeued-st.Processed) > maxHeld {
							maxHeld = int(st.Dequeued - st.Processed)
						}
					}
				}()
				st := drain(t, w)
				close(stop)
				<-sampled
				if st.Processed != 256 || svc.Len("work") != 0 {
					t.Fatalf("stats %+v, %d left", st, svc.Len("work"))
				}
				if int(most.Load()) != tc.wantRunning {
					t.Fatalf("at most %d batch calls ran at once, want %d", most.Load(), tc.wantRunning)
				}
				if maxHeld > tc.maxHeld {
					t.Fatalf("the worker held %d messages at once, want at most %d", maxHeld, tc.maxHeld)
				}
			})
		})
	}
}
