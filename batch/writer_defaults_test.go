package batch_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/batch"
)

// TestWriterKeepsAnyPositiveMaxDelay: only a MaxDelay of 0 or less means
// the default (5 s); a positive one, however small, caps the back-off: with
// MaxDelay 1 ns the second resend waits at most 1 ns after a first of half
// to all of BaseDelay.
func TestWriterKeepsAnyPositiveMaxDelay(t *testing.T) {
	deadline(t, writerDeadline)
	svc, client := newFake(t, nil)
	svc.FailTransactionOperation(1, 2, http.StatusServiceUnavailable, "ServerBusy")
	log := &records{}
	base := 4 * time.Millisecond
	w := batch.NewWriter(client, &batch.WriterOptions{BaseDelay: base, MaxDelay: time.Nanosecond, Logger: slog.New(log)})
	sum, err := w.Write(t.Context(), slices.Values(threeEvents()), nil)
	if err != nil || sum.Requests != 3 {
		t.Fatalf("summary %+v, error %v; want 3 requests, the last committing", sum, err)
	}
	recs := log.withMessage(resendMessage)
	if len(recs) != 2 {
		t.Fatalf("%d resend records, want 2: %v", len(recs), recs)
	}
	if wait := recs[0]["wait"].Duration(); wait < base/2 || wait > base {
		t.Errorf("the first resend waited %v, want between %v and %v", wait, base/2, base)
	}
	if wait := recs[1]["wait"].Duration(); wait > time.Nanosecond {
		t.Errorf("the second resend waited %v, over MaxDelay (1ns)", wait)
	}
}

// firstSend signals the first transaction it is given, and accepts all.
type firstSend struct {
	committingClient
	sent chan struct{}
}

func (f *firstSend) SubmitTransaction(ctx context.Context, actions []aztables.TransactionAction, opts *aztables.SubmitTransactionOptions) (aztables.TransactionResponse, error) {
	select {
	case f.sent <- struct{}{}:
	default:
	}
	return f.committingClient.SubmitTransaction(ctx, actions, opts)
}

// defaultIdleFlushOps is IdleFlushOps' documented default.
const defaultIdleFlushOps = 1000

// TestWriterDefaultIdleFlushStartsEarly: IdleFlushOps 0 is the default,
// 1,000, not "never": with operations spread one per
// partition, the first request leaves once that many wait, before the
// input ends (the input here waits for it, for at most 10 s).
func TestWriterDefaultIdleFlushStartsEarly(t *testing.T) {
	deadline(t, writerDeadline)
	rec := &firstSend{sent: make(chan struct{}, 1)}
	ops := func(yield func(batch.Op) bool) {
		for i := range defaultIdleFlushOps + 10 {
			if i == defaultIdleFlushOps+1 {
				select {
				case <-rec.sent:
				case <-time.After(10 * time.Second):
					t.Errorf("no request after %d operations in as many partitions", i)
					return
				}
			}
			if !yield(batch.Add(ev(fmt.Sprintf("p%05d", i), i))) {
				return
			}
		}
	}
	sum, err := batch.NewWriter(rec, &batch.WriterOptions{IdleFlushOps: 0}).Write(t.Context(), ops, nil)
	if err != nil || sum.Operations != defaultIdleFlushOps+10 {
		t.Fatalf("write: %+v %v", sum, err)
	}
}
