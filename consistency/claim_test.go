package consistency_test

import (
	"context"
	"errors"
	"log/slog"
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
		_, q, p := queues(t)
		if err := consistency.NewSender(q, nil).Send(t.Context(), "slow.v1", "k", 1, nil); err != nil {
			t.Fatal(err)
		}
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
		st, err := w.Drain(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
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
