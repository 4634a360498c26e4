package batch_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// The SDK's retry policy is the only transport retry: a transaction the
// service keeps answering 503 costs the SDK's tries (MaxRetries 3 + 1), not
// MaxAttempts times as many. (conformance RunRetries counts every
// failure kind on the fake and on Azurite, and the resend the Writer keeps:
// an operation throttled inside a 202.)
func TestWriterLeavesTransportRetriesToTheSDK(t *testing.T) {
	deadline(t, writerDeadline)
	svc, c := newFake(t, nil)
	svc.FailNext(fake.OpBatch, 4, http.StatusServiceUnavailable, "ServerBusy")
	w := batch.NewWriter(c, &batch.WriterOptions{MaxAttempts: 5, BaseDelay: 1, MaxDelay: 1})
	sum, err := w.Write(t.Context(), slices.Values([]batch.Op{batch.Add(ev("p", 1))}), nil)
	if !table.Is(err, table.ErrThrottled) || sum.Requests != 1 || sum.Retries != 0 || sum.Failed != 1 {
		t.Fatalf("after 503s: %+v %v", sum, err)
	}
	if n := svc.Count(fake.OpBatch); n != 4 {
		t.Fatalf("%d batch requests reached the service, want 4: the SDK's own tries", n)
	}

	// Within the SDK's tries the transaction commits: one request made.
	svc.ResetCounts()
	svc.FailNext(fake.OpBatch, 3, http.StatusServiceUnavailable, "ServerBusy")
	sum, err = w.Write(t.Context(), slices.Values([]batch.Op{batch.Add(ev("p", 2))}), nil)
	if err != nil || sum.Requests != 1 || sum.Transactions != 1 || svc.Count(fake.OpBatch) != 4 {
		t.Fatalf("after three 503s: %+v %v, %d requests", sum, err, svc.Count(fake.OpBatch))
	}
}
