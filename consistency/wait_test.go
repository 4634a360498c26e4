package consistency_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/fake"
)

// TestFullSlotsWaitForAFinishingHandler: while every handler slot is busy
// the worker sleeps until a handler finishes, instead of waking up every
// millisecond to look (1,000 wake-ups a second for nothing).
func TestFullSlotsWaitForAFinishingHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, q, p := queues(t)
		_ = consistency.NewSender(q, nil).Send(t.Context(), "slow.v1", "k", 1, nil)
		w := consistency.NewWorker(q, p, &consistency.WorkerOptions{Concurrency: 1, Logger: quiet})
		_ = w.Handle("slow.v1", func(ctx context.Context, _ *consistency.Message) error {
			time.Sleep(10 * time.Second) // virtual time
			return nil
		})
		if st, err := w.Drain(t.Context(), nil); err != nil || st.Processed != 1 {
			t.Fatalf("drain: %+v %v", st, err)
		}
		if n := consistency.LoopIterations(w); n > 5 {
			t.Fatalf("the dequeue loop went round %d times during one 10 s handler", n)
		}
	})
}

// TestIdleRequestRate: on an empty queue the worker backs off from 100 ms
// to 5 s between dequeues, so an idle worker costs 7 dequeues in its first
// 6.3 s and then one per 5 s: 12 a minute, 720 an hour.
func TestIdleRequestRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc, q, p := queues(t)
		svc.ResetCounts()
		w := consistency.NewWorker(q, p, &consistency.WorkerOptions{Logger: quiet})
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		if err := w.Run(ctx, nil); err != nil {
			t.Fatal(err)
		}
		got := svc.Count(fake.OpDequeue)
		// 7 dequeues at 0, 0.1, 0.3, 0.7, 1.5, 3.1, 6.3 s, then one every 5 s.
		want := 7 + int((time.Hour-6300*time.Millisecond)/(5*time.Second))
		if got < want-1 || got > want+1 || svc.Total() != got {
			t.Fatalf("an idle hour cost %d dequeues (%d requests in all); want %d", got, svc.Total(), want)
		}
		t.Logf("idle worker: %d requests in an hour (%.2f/s)", got, float64(got)/3600)
	})
}

// TestPanickingCallbackIsContained: a panic in OnProcessed is logged and
// goes no further; the worker processes every message.
func TestPanickingCallbackIsContained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc, q, p := queues(t)
		s := consistency.NewSender(q, nil)
		for i := range 10 {
			_ = s.Send(t.Context(), "x.v1", string(rune('a'+i)), i, nil)
		}
		w := consistency.NewWorker(q, p, &consistency.WorkerOptions{Logger: quiet, OnProcessed: func(*consistency.Message) { panic("callback bug") }})
		_ = w.Handle("x.v1", func(context.Context, *consistency.Message) error { return nil })
		if st, err := w.Drain(t.Context(), nil); err != nil || st.Processed != 10 || svc.Len("work") != 0 {
			t.Fatalf("%+v %v; %d left", st, err, svc.Len("work"))
		}
	})
}

// lateRetryQueue forces one interleaving: its first empty dequeue returns
// only after a running handler has failed, made its message visible again
// and finished.
type lateRetryQueue struct {
	consistency.Queue
	dequeuing chan struct{} // closed when the empty dequeue has been answered
	retried   chan struct{} // receives when a retry has made a message visible
	once      sync.Once
}

func (q *lateRetryQueue) DequeueMessages(ctx context.Context, o *azqueue.DequeueMessagesOptions) (azqueue.DequeueMessagesResponse, error) {
	resp, err := q.Queue.DequeueMessages(ctx, o)
	if err == nil && len(resp.Messages) == 0 {
		q.once.Do(func() {
			close(q.dequeuing)
			<-q.retried
			time.Sleep(time.Millisecond) // virtual: the handler's goroutine ends meanwhile
		})
	}
	return resp, err
}

func (q *lateRetryQueue) UpdateMessage(ctx context.Context, id, pop, text string, o *azqueue.UpdateMessageOptions) (azqueue.UpdateMessageResponse, error) {
	resp, err := q.Queue.UpdateMessage(ctx, id, pop, text, o)
	if o != nil && o.VisibilityTimeout != nil && *o.VisibilityTimeout == 0 {
		q.retried <- struct{}{}
	}
	return resp, err
}

// TestDrainSeesAMessageRetriedDuringItsLastDequeue: Drain stopped when a
// dequeue came back empty and no handler was running any more, although a
// handler had failed during that dequeue and made its message visible
// again: the message was left for a later Drain. Now a dequeue issued
// while handlers ran is followed by another once they finish.
func TestDrainSeesAMessageRetriedDuringItsLastDequeue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, q, p := queues(t)
		_ = consistency.NewSender(q, nil).Send(t.Context(), "flaky.v1", "k", 1, nil)
		lq := &lateRetryQueue{Queue: q, dequeuing: make(chan struct{}), retried: make(chan struct{}, 1)}
		w := consistency.NewWorker(lq, p, &consistency.WorkerOptions{MaxDequeues: 1, Backoff: func(int64) time.Duration { return 0 }, Logger: quiet})
		_ = w.Handle("flaky.v1", func(context.Context, *consistency.Message) error {
			<-lq.dequeuing
			return errors.New("fails")
		})
		_, err := w.Drain(t.Context(), nil)
		var rep *consistency.FailureReport
		if !errors.As(err, &rep) || rep.Retried != 1 || rep.Poisoned != 1 {
			t.Fatalf("Drain: %v; want the message retried once, then seen again and poisoned", err)
		}
	})
}
