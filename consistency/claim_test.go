package consistency_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
)

// stolenQueue renews with a receipt the queue no longer knows, as after
// another consumer dequeued the message: every renewal is refused (404
// MessageNotFound from the fake).
type stolenQueue struct {
	consistency.Queue
	updates, deletes atomic.Int32
}

func (q *stolenQueue) UpdateMessage(ctx context.Context, id, _, text string, o *azqueue.UpdateMessageOptions) (azqueue.UpdateMessageResponse, error) {
	q.updates.Add(1)
	return q.Queue.UpdateMessage(ctx, id, "stale", text, o)
}

func (q *stolenQueue) DeleteMessage(ctx context.Context, id, pop string, o *azqueue.DeleteMessageOptions) (azqueue.DeleteMessageResponse, error) {
	q.deletes.Add(1)
	return q.Queue.DeleteMessage(ctx, id, pop, o)
}

// TestRefusedRenewalLosesTheClaim: a renewal refused for its receipt stops
// the renewals of that message, cancels its handler's context with
// ErrClaimLost (the service's error in the chain), is counted and logged
// once, and the worker neither deletes nor counts the message processed.
func TestRefusedRenewalLosesTheClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, p := oneSlowMessage(t)
		sq := &stolenQueue{Queue: q}
		logs := &warnRecords{}
		w := consistency.NewWorker(sq, p, &consistency.WorkerOptions{Visibility: 3 * time.Second, Logger: slog.New(logs)})
		var cause error
		_ = w.Handle("slow.v1", func(ctx context.Context, _ *consistency.Message) error {
			// Runs past two renewal times (1 s, then 1 s after the first
			// answer) and within the visibility, ignoring its context.
			time.Sleep(2500 * time.Millisecond)
			cause = context.Cause(ctx)
			return nil
		})
		st := drain(t, w)
		var re *azcore.ResponseError
		if !errors.Is(cause, consistency.ErrClaimLost) || !errors.As(cause, &re) || re.StatusCode != 404 {
			t.Fatalf("handler's context cause: %v; want ErrClaimLost with the service's 404", cause)
		}
		if n := sq.updates.Load(); n != 1 {
			t.Fatalf("%d renewals; want 1, the refused one, and none after it", n)
		}
		if n := sq.deletes.Load(); n != 0 {
			t.Fatalf("%d deletes of a message whose claim was lost", n)
		}
		if st.ClaimsLost != 1 || st.Processed != 0 || st.Renewed != 0 {
			t.Fatalf("stats %+v; want 1 claim lost, nothing processed or renewed", st)
		}
		if n := logs.count(); n != 1 {
			t.Fatalf("%d Warn records; want 1, the lost claim", n)
		}
	})
}

// warnRecords counts the records at Warn and above.
type warnRecords struct{ n atomic.Int32 }

func (h *warnRecords) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h *warnRecords) Handle(context.Context, slog.Record) error    { h.n.Add(1); return nil }
func (h *warnRecords) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *warnRecords) WithGroup(string) slog.Handler                { return h }
func (h *warnRecords) count() int                                   { return int(h.n.Load()) }

// timedQueue records when each Update Message and Delete Message was sent,
// in the bubble's virtual time.
type timedQueue struct {
	consistency.Queue
	requestDelay    time.Duration // how late each renewal reaches the queue
	answerDelay     time.Duration // how late each renewal's answer comes
	mu              sync.Mutex
	updates, delete []time.Time
}

func (q *timedQueue) UpdateMessage(ctx context.Context, id, pop, text string, o *azqueue.UpdateMessageOptions) (azqueue.UpdateMessageResponse, error) {
	q.mu.Lock()
	q.updates = append(q.updates, time.Now())
	q.mu.Unlock()
	select { // the request is slow to reach the queue
	case <-time.After(q.requestDelay):
	case <-ctx.Done():
		return azqueue.UpdateMessageResponse{}, ctx.Err()
	}
	resp, err := q.Queue.UpdateMessage(ctx, id, pop, text, o)
	// The queue has applied the renewal; its answer is late.
	time.Sleep(q.answerDelay)
	return resp, err
}

func (q *timedQueue) DeleteMessage(ctx context.Context, id, pop string, o *azqueue.DeleteMessageOptions) (azqueue.DeleteMessageResponse, error) {
	q.mu.Lock()
	q.delete = append(q.delete, time.Now())
	q.mu.Unlock()
	return q.Queue.DeleteMessage(ctx, id, pop, o)
}

// TestRenewalsAreSpacedAThirdOfTheVisibility pins the renewal schedule in
// virtual time: with a 3 s visibility and an instant queue, a handler of
// 2.5 s sees renewals at 1 s and 2 s (the first a third of the visibility
// after the dequeue, the next a third after the previous answer), none
// after it returned, each renewal's receipt used by the next call, the
// delete at 2.5 s with the newest receipt, and Drain done at 2.5 s (the
// worker waits for no renewer's timer).
func TestRenewalsAreSpacedAThirdOfTheVisibility(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, p := oneSlowMessage(t)
		tq := &timedQueue{Queue: q}
		w := consistency.NewWorker(tq, p, &consistency.WorkerOptions{Visibility: 3 * time.Second})
		var cause error
		var handlerCtx context.Context
		_ = w.Handle("slow.v1", func(ctx context.Context, _ *consistency.Message) error {
			handlerCtx = ctx
			time.Sleep(2500 * time.Millisecond)
			cause = context.Cause(ctx)
			return nil
		})
		start := time.Now()
		st := drain(t, w)
		done := time.Since(start)
		tq.mu.Lock()
		defer tq.mu.Unlock()
		var at []time.Duration
		for _, u := range tq.updates {
			at = append(at, u.Sub(start))
		}
		if len(at) != 2 || at[0] != time.Second || at[1] != 2*time.Second {
			t.Fatalf("renewals at %v; want [1s 2s]: a third of the 3 s visibility apart, none after the handler returned at 2.5s", at)
		}
		if len(tq.delete) != 1 || tq.delete[0].Sub(start) != 2500*time.Millisecond {
			t.Fatalf("deletes at %v after the start; want one, at 2.5s, as the handler returned", tq.delete)
		}
		if cause != nil {
			t.Fatalf("the handler's context ended (%v) while the worker held its claim", cause)
		}
		if st.Processed != 1 || st.Renewed != 2 || st.ClaimsLost != 0 {
			t.Fatalf("stats %+v; want 1 processed, 2 renewed, no claim lost", st)
		}
		if done != 2500*time.Millisecond {
			t.Fatalf("Drain returned %v after the start; want 2.5s: nothing waits for a renewal timer", done)
		}
		if handlerCtx.Err() == nil {
			t.Fatal("the handler's context is still live after its message was settled")
		}
	})
}

// TestALateRenewalAnswerIsWaitedForAndMeasured: the queue applies a
// renewal at 1 s but answers it at 2 s. The handler returns at 1.5 s, so
// the delete goes with the receipt the worker holds, which the queue has
// replaced, and is refused; the worker then waits for the renewal's
// answer and deletes again with its receipt at 2 s, at once (its renewer
// is halted, not left to its next timer). Nothing is lost, and the
// renewal's round trip is Stats.SlowestRenewal.
func TestALateRenewalAnswerIsWaitedForAndMeasured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, p := oneSlowMessage(t)
		tq := &timedQueue{Queue: q, answerDelay: time.Second}
		w := consistency.NewWorker(tq, p, &consistency.WorkerOptions{Visibility: 3 * time.Second})
		_ = w.Handle("slow.v1", func(ctx context.Context, _ *consistency.Message) error {
			time.Sleep(1500 * time.Millisecond)
			return nil
		})
		start := time.Now()
		st := drain(t, w)
		tq.mu.Lock()
		defer tq.mu.Unlock()
		var dels []time.Duration
		for _, d := range tq.delete {
			dels = append(dels, d.Sub(start))
		}
		if len(dels) != 2 || dels[0] != 1500*time.Millisecond || dels[1] != 2*time.Second {
			t.Fatalf("deletes at %v; want [1.5s 2s]: refused with the replaced receipt, then sent with the renewal's as its answer came", dels)
		}
		if st.Processed != 1 || st.ClaimsLost != 0 || st.Renewed != 1 {
			t.Fatalf("stats %+v; want 1 processed, 1 renewed, no claim lost", st)
		}
		if st.SlowestRenewal != time.Second {
			t.Fatalf("SlowestRenewal %v; want 1s, the renewal's round trip", st.SlowestRenewal)
		}
	})
}

// TestARenewalInFlightDoesNotHoldTheMessage: a renewal sent at 1 s takes
// a second to reach the queue; the handler returns at 1.5 s. The delete
// goes at once and succeeds, the renewal in flight is abandoned, and
// Drain is done at 1.5 s.
func TestARenewalInFlightDoesNotHoldTheMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, p := oneSlowMessage(t)
		tq := &timedQueue{Queue: q, requestDelay: time.Second}
		w := consistency.NewWorker(tq, p, &consistency.WorkerOptions{Visibility: 3 * time.Second})
		_ = w.Handle("slow.v1", func(ctx context.Context, _ *consistency.Message) error {
			time.Sleep(1500 * time.Millisecond)
			return nil
		})
		start := time.Now()
		st := drain(t, w)
		if done := time.Since(start); done != 1500*time.Millisecond {
			t.Fatalf("Drain returned %v after the start; want 1.5s: the renewal in flight holds nothing up", done)
		}
		if st.Processed != 1 || st.ClaimsLost != 0 {
			t.Fatalf("stats %+v; want 1 processed, no claim lost", st)
		}
	})
}

// TestADeleteRefusedBeforeAnyRenewalLosesTheClaim: the handler returns
// before the first renewal is due and the queue refuses the delete's
// receipt (another consumer has the message): the claim is lost, counted
// and logged once, and the worker does not wait for a renewal that was
// never started.
func TestADeleteRefusedBeforeAnyRenewalLosesTheClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, p := oneSlowMessage(t)
		sq := &stolenQueue{Queue: q}
		logs := &warnRecords{}
		w := consistency.NewWorker(refusedDelete{sq}, p, &consistency.WorkerOptions{Visibility: 3 * time.Second, Logger: slog.New(logs)})
		_ = w.Handle("slow.v1", func(ctx context.Context, _ *consistency.Message) error { return nil })
		st := drain(t, w)
		if st.ClaimsLost != 1 || st.Processed != 0 {
			t.Fatalf("stats %+v; want the claim lost, nothing processed", st)
		}
		if n := sq.updates.Load(); n != 0 {
			t.Fatalf("%d renewals of a message whose handler returned at once", n)
		}
		if n := logs.count(); n != 1 {
			t.Fatalf("%d Warn records; want 1, the lost claim", n)
		}
	})
}

// refusedDelete deletes with a receipt the queue does not know.
type refusedDelete struct{ *stolenQueue }

func (q refusedDelete) DeleteMessage(ctx context.Context, id, _ string, o *azqueue.DeleteMessageOptions) (azqueue.DeleteMessageResponse, error) {
	return q.stolenQueue.DeleteMessage(ctx, id, "stale", o)
}

// TestOnlyARenewalOverAQuarterOfTheVisibilityWarns: with a 4 s
// visibility, a renewal that takes exactly 1 s is within its budget and a
// renewal of 1.001 s is not: it is logged once.
func TestOnlyARenewalOverAQuarterOfTheVisibilityWarns(t *testing.T) {
	for _, c := range []struct {
		delay time.Duration
		warns int
	}{{time.Second, 0}, {time.Second + time.Millisecond, 1}} {
		synctest.Test(t, func(t *testing.T) {
			q, p := oneSlowMessage(t)
			logs := &warnRecords{}
			tq := &timedQueue{Queue: q, answerDelay: c.delay}
			w := consistency.NewWorker(tq, p, &consistency.WorkerOptions{Visibility: 4 * time.Second, Logger: slog.New(logs)})
			_ = w.Handle("slow.v1", func(ctx context.Context, _ *consistency.Message) error {
				time.Sleep(3 * time.Second) // one renewal, at 4/3 s, answered before 3 s
				return nil
			})
			st, err := w.Drain(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if st.Renewed != 1 || st.SlowestRenewal != c.delay {
				t.Fatalf("stats %+v; want 1 renewal taking %v", st, c.delay)
			}
			if n := logs.count(); n != c.warns {
				t.Fatalf("a renewal of %v with a 4 s visibility: %d Warn records; want %d", c.delay, n, c.warns)
			}
		})
	}
}

// TestAHandlersContextEndsWithItsMessage: while the worker runs on, the
// context of a handler whose message was settled is already done, so what
// the handler left tied to it (timers, requests in flight) is released.
func TestAHandlersContextEndsWithItsMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, p := oneSlowMessage(t)
		w := consistency.NewWorker(q, p, &consistency.WorkerOptions{Visibility: 3 * time.Second})
		handled := make(chan context.Context, 1)
		_ = w.Handle("slow.v1", func(ctx context.Context, _ *consistency.Message) error {
			handled <- ctx
			return nil
		})
		ctx, cancel := context.WithCancel(t.Context())
		ran := make(chan error, 1)
		go func() { ran <- w.Run(ctx, nil) }()
		hctx := <-handled
		time.Sleep(time.Second) // the message is settled well before
		synctest.Wait()
		err := hctx.Err()
		cancel()
		<-ran
		if err == nil {
			t.Fatal("the handler's context is live a second after its message was settled, while the worker runs on")
		}
	})
}

// oneSlowMessage returns a queue holding one "slow.v1" message and its
// poison queue.
func oneSlowMessage(t *testing.T) (q, poison consistency.Queue) {
	t.Helper()
	_, q, poison = queues(t)
	if err := consistency.NewSender(q, nil).Send(t.Context(), "slow.v1", "k", 1, nil); err != nil {
		t.Fatal(err)
	}
	return q, poison
}

// drain runs w until its queue is empty and returns its stats.
func drain(t *testing.T, w *consistency.Worker) consistency.Stats {
	t.Helper()
	st, err := w.Drain(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
