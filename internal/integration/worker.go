package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/envelope"
)

// quiet discards a worker's logs in cases that fail handlers on purpose.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// poisonRecords reads every record of a poison queue.
func poisonRecords(t *testing.T, poison *azqueue.QueueClient) []envelope.PoisonRecord {
	t.Helper()
	var out []envelope.PoisonRecord
	for {
		d, err := poison.DequeueMessages(t.Context(), &azqueue.DequeueMessagesOptions{NumberOfMessages: to.Ptr(int32(32)), VisibilityTimeout: to.Ptr(int32(60))})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Messages) == 0 {
			return out
		}
		for _, m := range d.Messages {
			var rec envelope.PoisonRecord
			if err := json.Unmarshal([]byte(*m.MessageText), &rec); err != nil {
				t.Fatal(err)
			}
			out = append(out, rec)
		}
	}
}

// RunWorker runs the worker's robustness cases: what a bad message or a
// bad handler may and may not do to the rest of the queue.
func RunWorker(t *testing.T, env Env) {
	t.Run("a panicking handler fails only its own message; 1,000 healthy ones are processed, none poisoned", virtual(env, func(t *testing.T) {
		ctx := t.Context() // the bubble's own on the fake
		const healthy, panicky = 1000, 5
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		sender := consistency.NewSender(q, nil)
		for i := range healthy {
			if err := sender.Send(ctx, "ok.v1", fmt.Sprint("ok", i), i, nil); err != nil {
				t.Fatal(err)
			}
			if i%(healthy/panicky) == 0 {
				if err := sender.Send(ctx, "boom.v1", fmt.Sprint("boom", i), i, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		var mu sync.Mutex
		done := map[string]int{}
		w := consistency.NewWorker(q, poison, quick(&consistency.WorkerOptions{Logger: quiet}))
		_ = w.Handle("ok.v1", func(_ context0, m *consistency.Message) error {
			mu.Lock()
			done[m.Key]++
			mu.Unlock()
			return nil
		})
		_ = w.Handle("boom.v1", func(_ context0, m *consistency.Message) error {
			var m2 map[string]int
			//lint:ignore SA5000 the nil-map write is the point: a bug that panics in production
			m2[m.Key] = 1
			return nil
		})
		drainAll(t, q, w)
		if len(done) != healthy {
			t.Fatalf("%d of %d healthy messages processed", len(done), healthy)
		}
		recs := poisonRecords(t, poison)
		if len(recs) != panicky {
			t.Fatalf("poison queue holds %d records, want the %d panicking messages", len(recs), panicky)
		}
		for _, r := range recs {
			if r.Envelope == nil || r.Envelope.Type != "boom.v1" {
				t.Fatalf("a healthy message was poisoned: %+v", r)
			}
			if !strings.Contains(r.Error, "assignment to entry in nil map") || !strings.Contains(r.Error, "goroutine") {
				t.Fatalf("the poison record lacks the panic value or its stack: %q", r.Error)
			}
		}
		st := w.Stats()
		const maxDequeues = 5 // WorkerOptions.MaxDequeues' default
		if st.Processed != healthy || st.Poisoned != panicky || st.Panicked != panicky*maxDequeues {
			t.Fatalf("stats %+v; want %d processed, %d poisoned, %d panics", st, healthy, panicky, panicky*maxDequeues)
		}
	}))

	t.Run("Handle refuses a second handler for a type, so no message goes to the wrong one", virtual(env, func(t *testing.T) {
		ctx := t.Context() // the bubble's own on the fake
		// Two indexes registered under one type: before, the second silently
		// replaced the first, whose messages were then deleted unapplied.
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		w := consistency.NewWorker(q, poison, quick(&consistency.WorkerOptions{Logger: quiet}))
		var first, second int
		if err := w.Handle("index.v1", func(context0, *consistency.Message) error { first++; return nil }); err != nil {
			t.Fatal(err)
		}
		err := w.Handle("index.v1", func(context0, *consistency.Message) error { second++; return nil })
		if !errors.Is(err, consistency.ErrDuplicateHandler) || !strings.Contains(err.Error(), `"index.v1"`) {
			t.Fatalf("second Handle for index.v1: %v; want ErrDuplicateHandler naming the type", err)
		}
		if err := consistency.NewSender(q, nil).Send(ctx, "index.v1", "k", 1, nil); err != nil {
			t.Fatal(err)
		}
		drainAll(t, q, w)
		if first != 1 || second != 0 {
			t.Fatalf("first handler ran %d times, the refused one %d", first, second)
		}
	}))

	t.Run("Drain and Run report what failed, log it at Warn and count it in Stats", virtual(env, func(t *testing.T) {
		ctx := t.Context() // the bubble's own on the fake
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		sender := consistency.NewSender(q, nil)
		for _, typ := range []string{"ok.v1", "flaky.v1", "unknown.v1"} {
			if err := sender.Send(ctx, typ, "k", 1, nil); err != nil {
				t.Fatal(err)
			}
		}
		logs := &warnings{}
		w := consistency.NewWorker(q, poison, quick(&consistency.WorkerOptions{MaxDequeues: 2, Logger: slog.New(logs)}))
		_ = w.Handle("ok.v1", func(context0, *consistency.Message) error { return nil })
		attempts := 0
		_ = w.Handle("flaky.v1", func(context0, *consistency.Message) error {
			attempts++
			return fmt.Errorf("attempt %d failed", attempts)
		})
		_, err := w.Drain(ctx, nil)
		var rep *consistency.FailureReport
		if !errors.As(err, &rep) {
			t.Fatalf("Drain with failing handlers returned %v; want a *FailureReport", err)
		}
		flaky, unknown := rep.ByType["flaky.v1"], rep.ByType["unknown.v1"]
		if flaky.Retried != 2 || flaky.Poisoned != 1 || unknown.Poisoned != 1 || rep.Retried != 2 || rep.Poisoned != 2 {
			t.Fatalf("report %+v; want flaky.v1 retried twice then poisoned, unknown.v1 poisoned", rep)
		}
		if flaky.LastError == nil || !strings.Contains(flaky.LastError.Error(), "attempt 2 failed") || !strings.Contains(err.Error(), "attempt 2 failed") {
			t.Fatalf("flaky.v1's last error: %v (report: %v)", flaky.LastError, err)
		}
		if st := w.Stats(); st.Failures["flaky.v1"].Retried != 2 || st.Failures["unknown.v1"].Poisoned != 1 || st.Processed != 1 {
			t.Fatalf("stats %+v", st)
		}
		if n := logs.count(); n < 4 {
			t.Fatalf("%d Warn records for 2 retries and 2 poisoned messages", n)
		}
		if _, err := w.Drain(ctx, nil); err != nil {
			t.Fatalf("a Drain with nothing failing reported %v", err)
		}

		// Run reports the failures of its own run when its context ends.
		if err := sender.Send(ctx, "flaky.v1", "k2", 1, nil); err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		w2 := consistency.NewWorker(q, poison, quick(&consistency.WorkerOptions{MaxDequeues: 1, Logger: quiet,
			OnPoisoned: func(*consistency.Message, string, error) { cancel() }}))
		_ = w2.Handle("flaky.v1", func(context0, *consistency.Message) error { return errors.New("still failing") })
		err = w2.Run(rctx, nil)
		if !errors.As(err, &rep) || rep.ByType["flaky.v1"].Poisoned != 1 || !strings.Contains(err.Error(), "still failing") {
			t.Fatalf("Run returned %v; want a report of the poisoned flaky.v1", err)
		}
	}))

	t.Run("slow handlers: no dequeued message waits out its visibility, none is poisoned", virtual(env, func(t *testing.T) {
		ctx := t.Context() // the bubble's own on the fake
		// Handlers take 3/4 of the visibility timeout. A worker that
		// dequeued more messages than it had free slots left the extra ones
		// waiting until their visibility ran out; they came back with a
		// higher dequeue count and, with MaxDequeues 1, went to poison.
		const n = 6
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		sender := consistency.NewSender(q, nil)
		for i := range n {
			if err := sender.Send(ctx, "slow.v1", fmt.Sprint("k", i), i, nil); err != nil {
				t.Fatal(err)
			}
		}
		w := consistency.NewWorker(q, poison, &consistency.WorkerOptions{Concurrency: 2, Visibility: 2 * time.Second, MaxDequeues: 1,
			PollInterval: 20 * time.Millisecond, MaxPollInterval: 100 * time.Millisecond, Logger: quiet})
		_ = w.Handle("slow.v1", func(ctx context0, _ *consistency.Message) error {
			select {
			case <-time.After(1500 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		st, err := w.Drain(ctx, nil)
		if err != nil || st.Processed != n || st.Dequeued != n || st.Poisoned != 0 || st.Abandoned != 0 {
			t.Fatalf("stats %+v, %v; want %d messages each dequeued once and processed", st, err, n)
		}
		if got := len(poisonRecords(t, poison)); got != 0 {
			t.Fatalf("%d healthy messages poisoned", got)
		}
	}))
	t.Run("Drain looks again after a handler that failed during its last dequeue", virtual(env, func(t *testing.T) {
		// Drain stopped when a dequeue came back empty and no handler was
		// running, although one had failed during that dequeue and made its
		// message visible again: the message waited for a later Drain.
		ctx := t.Context()
		q, poison := env.NewQueue(t, nil), env.NewQueue(t, nil)
		if err := consistency.NewSender(q, nil).Send(ctx, "flaky.v1", "k", 1, nil); err != nil {
			t.Fatal(err)
		}
		lq := &lateRetryQueue{Queue: q, dequeuing: make(chan struct{}), retried: make(chan struct{}, 1)}
		w := consistency.NewWorker(lq, poison, quick(&consistency.WorkerOptions{MaxDequeues: 1, Logger: quiet}))
		_ = w.Handle("flaky.v1", func(context0, *consistency.Message) error {
			<-lq.dequeuing
			return errors.New("fails")
		})
		_, err := w.Drain(ctx, nil)
		var rep *consistency.FailureReport
		if !errors.As(err, &rep) || rep.Retried != 1 || rep.Poisoned != 1 {
			t.Fatalf("Drain: %v; want the message retried once, then seen again and poisoned", err)
		}
	}))
}

// warnings is a slog.Handler that counts records at Warn and above.
type warnings struct {
	mu sync.Mutex
	n  int
}

func (h *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (h *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
	}
	return nil
}
func (h *warnings) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *warnings) WithGroup(string) slog.Handler      { return h }
func (h *warnings) count() int                         { h.mu.Lock(); defer h.mu.Unlock(); return h.n }

// virtual returns f to run in virtual time (a testing/synctest bubble) on
// the fake, whose clock is time.Now and so follows the bubble, and as it is
// on a real service: the cases that wait out visibility timeouts and
// back-offs take milliseconds on the fake and still run for real on
// Azurite.
func virtual(env Env, f func(t *testing.T)) func(t *testing.T) {
	if env.Name != "fake" {
		return f
	}
	return func(t *testing.T) { synctest.Test(t, f) }
}

// lateRetryQueue forces one interleaving: its first empty dequeue returns
// only after a running handler has failed, made its message visible again
// and finished (50 ms of slack for its goroutine to end: virtual on the
// fake).
type lateRetryQueue struct {
	consistency.Queue
	dequeuing chan struct{} // closed when the empty dequeue has been answered
	retried   chan struct{} // receives when a retry has made a message visible
	once      sync.Once
}

func (q *lateRetryQueue) DequeueMessages(ctx context0, o *azqueue.DequeueMessagesOptions) (azqueue.DequeueMessagesResponse, error) {
	resp, err := q.Queue.DequeueMessages(ctx, o)
	if err == nil && len(resp.Messages) == 0 {
		q.once.Do(func() {
			close(q.dequeuing)
			<-q.retried
			time.Sleep(50 * time.Millisecond)
		})
	}
	return resp, err
}

func (q *lateRetryQueue) UpdateMessage(ctx context0, id, pop, text string, o *azqueue.UpdateMessageOptions) (azqueue.UpdateMessageResponse, error) {
	resp, err := q.Queue.UpdateMessage(ctx, id, pop, text, o)
	if o != nil && o.VisibilityTimeout != nil && *o.VisibilityTimeout == 0 {
		q.retried <- struct{}{}
	}
	return resp, err
}
