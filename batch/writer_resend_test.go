package batch_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// records is a slog.Handler keeping every record, for tests that read what
// the Writer logged.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *records) Enabled(context.Context, slog.Level) bool { return true }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}
func (h *records) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *records) WithGroup(string) slog.Handler      { return h }

// withMessage returns the records logged with msg, each as its attributes.
func (h *records) withMessage(msg string) []map[string]slog.Value {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]slog.Value
	for _, r := range h.recs {
		if r.Message != msg {
			continue
		}
		attrs := map[string]slog.Value{"level": slog.StringValue(r.Level.String())}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value; return true })
		out = append(out, attrs)
	}
	return out
}

const resendMessage = "tablekit: transaction throttled; resending"

// threeEvents is one transaction of three adds on partition "p".
func threeEvents() []batch.Op {
	return []batch.Op{batch.Add(ev("p", 1)), batch.Add(ev("p", 2)), batch.Add(ev("p", 3))}
}

// storedRows counts the entities of partition pk.
func storedRows(t *testing.T, svc *fake.TableService, pk string) int {
	t.Helper()
	f := "PartitionKey eq '" + pk + "'"
	pager := svc.NewClient("events", nil).NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &f})
	n := 0
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Entities)
	}
	return n
}

// An operation the service throttled or timed out inside a transaction's 202
// answer (408, 429, 500, 503) rolled the whole transaction back, and the
// SDK's retry policy saw a 202: the Writer sends the transaction again, and
// it commits. The SDK made no retry of its own (one request per send).
func TestWriterResendsATransactionFailedInsideItsAnswer(t *testing.T) {
	deadline(t, writerDeadline)
	for _, c := range []struct {
		status int
		code   string
	}{
		{http.StatusRequestTimeout, "OperationTimedOut"},
		{http.StatusTooManyRequests, "TooManyRequests"},
		{http.StatusInternalServerError, "OperationTimedOut"},
		{http.StatusServiceUnavailable, "ServerBusy"},
	} {
		t.Run(http.StatusText(c.status), func(t *testing.T) {
			svc, client := newFake(t, nil)
			svc.FailTransactionOperation(1, 2, c.status, c.code)
			w := batch.NewWriter(client, &batch.WriterOptions{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
			sum, err := w.Write(t.Context(), slices.Values(threeEvents()), nil)
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			want := batch.Summary{Operations: 3, Transactions: 1, Requests: 3, Retries: 2}
			if sum.Operations != want.Operations || sum.Transactions != want.Transactions || sum.Requests != want.Requests ||
				sum.Retries != want.Retries || sum.Failed != 0 || sum.Skipped != 0 {
				t.Fatalf("summary %+v, want %+v", sum, want)
			}
			if n := svc.Count(fake.OpBatch); n != 3 {
				t.Fatalf("%d batch requests reached the service, want 3 (two rolled back, one committed)", n)
			}
			if n := storedRows(t, svc, "p"); n != 3 {
				t.Fatalf("%d entities stored, want 3", n)
			}
		})
	}
}

// MaxAttempts bounds the sends of a transaction that keeps being throttled
// inside its answer; the failure then names the throttled operation, and the
// partition's later transactions are skipped.
func TestWriterGivesUpAfterMaxAttempts(t *testing.T) {
	deadline(t, writerDeadline)
	for _, attempts := range []int{1, 3} {
		svc, client := newFake(t, nil)
		svc.FailTransactionOperation(2, 100, http.StatusServiceUnavailable, "ServerBusy")
		w := batch.NewWriter(client, &batch.WriterOptions{MaxAttempts: attempts, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
		sum, err := w.Write(t.Context(), slices.Values(threeEvents()), nil)
		if sum.Requests != attempts || sum.Retries != attempts-1 || sum.Failed != 1 || sum.Transactions != 0 || sum.Operations != 0 {
			t.Fatalf("MaxAttempts %d: summary %+v", attempts, sum)
		}
		if n := svc.Count(fake.OpBatch); n != attempts {
			t.Fatalf("MaxAttempts %d: %d batch requests, want %d", attempts, n, attempts)
		}
		var we *batch.WriteError
		if !errors.As(err, &we) || len(we.Failures) != 1 {
			t.Fatalf("MaxAttempts %d: error %v, want a *WriteError with one failure", attempts, err)
		}
		te := we.Failures[0]
		if te.Index != 2 || te.StatusCode != http.StatusServiceUnavailable || te.ErrorCode != "ServerBusy" || te.Op.RowKey() != ev("p", 3).RowKey {
			t.Fatalf("MaxAttempts %d: failure %+v, want operation 2 answered 503 ServerBusy", attempts, te)
		}
		if !table.Is(err, table.ErrThrottled) {
			t.Fatalf("MaxAttempts %d: %v is not classified as throttled", attempts, err)
		}
		if n := storedRows(t, svc, "p"); n != 0 {
			t.Fatalf("MaxAttempts %d: %d entities stored, want none (each send rolled back)", attempts, n)
		}
	}
}

// MaxAttempts 0 means the documented default, 5 sends.
func TestWriterDefaultMaxAttemptsIsFive(t *testing.T) {
	deadline(t, writerDeadline)
	svc, client := newFake(t, nil)
	svc.FailTransactionOperation(0, 100, http.StatusTooManyRequests, "TooManyRequests")
	w := batch.NewWriter(client, &batch.WriterOptions{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
	sum, err := w.Write(t.Context(), slices.Values(threeEvents()), nil)
	if err == nil || sum.Requests != 5 || svc.Count(fake.OpBatch) != 5 {
		t.Fatalf("summary %+v, %d requests, error %v; want 5 sends and a failure", sum, svc.Count(fake.OpBatch), err)
	}
}

// A 400-class failure inside the answer would fail the same way again: the
// Writer does not resend it, and logs no resend.
func TestWriterDoesNotResendARefusedOperation(t *testing.T) {
	deadline(t, writerDeadline)
	for _, c := range []struct {
		status int
		code   string
	}{
		{http.StatusBadRequest, "InvalidInput"},
		{http.StatusNotFound, "ResourceNotFound"},
		{http.StatusConflict, "EntityAlreadyExists"},
		{http.StatusPreconditionFailed, "UpdateConditionNotSatisfied"},
		{http.StatusRequestEntityTooLarge, "EntityTooLarge"},
	} {
		svc, client := newFake(t, nil)
		svc.FailTransactionOperation(1, 1, c.status, c.code)
		log := &records{}
		w := batch.NewWriter(client, &batch.WriterOptions{BaseDelay: time.Millisecond, Logger: slog.New(log)})
		sum, err := w.Write(t.Context(), slices.Values(threeEvents()), nil)
		if err == nil || sum.Requests != 1 || sum.Retries != 0 || sum.Failed != 1 || svc.Count(fake.OpBatch) != 1 {
			t.Fatalf("%d %s: summary %+v, %d requests, error %v; want one request and a failure", c.status, c.code, sum, svc.Count(fake.OpBatch), err)
		}
		if n := len(log.withMessage(resendMessage)); n != 0 {
			t.Fatalf("%d %s: %d resend records logged", c.status, c.code, n)
		}
		fails := log.withMessage("tablekit: transaction failed")
		if len(fails) != 1 || fails[0]["level"].String() != "WARN" || fails[0]["pk"].String() != "p" || fails[0]["ops"].Int64() != 3 {
			t.Fatalf("%d %s: failure records %v, want one warning naming partition p and its 3 operations", c.status, c.code, fails)
		}
	}
}

// Each resend waits between half and all of a delay that starts at BaseDelay
// and doubles up to MaxDelay, and logs one debug record saying so.
func TestWriterBackOffDoublesUpToMaxDelay(t *testing.T) {
	deadline(t, writerDeadline)
	svc, client := newFake(t, nil)
	svc.FailTransactionOperation(1, 4, http.StatusServiceUnavailable, "ServerBusy")
	log := &records{}
	base, maxDelay := 4*time.Millisecond, 10*time.Millisecond
	w := batch.NewWriter(client, &batch.WriterOptions{BaseDelay: base, MaxDelay: maxDelay, Logger: slog.New(log)})
	sum, err := w.Write(t.Context(), slices.Values(threeEvents()), nil)
	if err != nil || sum.Requests != 5 || sum.Retries != 4 {
		t.Fatalf("summary %+v, error %v; want 5 requests, the last committing", sum, err)
	}
	recs := log.withMessage(resendMessage)
	if len(recs) != 4 {
		t.Fatalf("%d resend records, want 4: %v", len(recs), recs)
	}
	delay := base
	for i, r := range recs {
		wait := r["wait"].Duration()
		if r["level"].String() != "DEBUG" || r["pk"].String() != "p" || r["attempt"].Int64() != int64(i+1) {
			t.Fatalf("record %d: %v, want a debug record of attempt %d on partition p", i, r, i+1)
		}
		if wait < delay/2 || wait > delay {
			t.Fatalf("attempt %d waited %v, want between %v and %v", i+1, wait, delay/2, delay)
		}
		if r["err"].Any() == nil {
			t.Fatalf("record %d names no error", i)
		}
		delay = min(2*delay, maxDelay)
	}
}

// A cancelled context stops the back-off at once: the failure is returned,
// not resent.
func TestWriterResendStopsWhenTheContextEnds(t *testing.T) {
	deadline(t, writerDeadline)
	svc, client := newFake(t, nil)
	svc.FailTransactionOperation(0, 100, http.StatusServiceUnavailable, "ServerBusy")
	ctx, cancel := context.WithCancel(t.Context())
	log := &records{}
	logger := slog.New(&cancelOnRecord{records: log, cancel: cancel})
	w := batch.NewWriter(client, &batch.WriterOptions{BaseDelay: time.Hour, MaxDelay: time.Hour, Logger: logger})
	sum, err := w.Write(ctx, slices.Values(threeEvents()), nil)
	if err == nil || sum.Requests != 1 || svc.Count(fake.OpBatch) != 1 {
		t.Fatalf("summary %+v, %d requests, error %v; want one request, then the cancellation ends the wait", sum, svc.Count(fake.OpBatch), err)
	}
}

// cancelOnRecord cancels a context when the Writer logs that it will resend.
type cancelOnRecord struct {
	*records
	cancel context.CancelFunc
}

func (h *cancelOnRecord) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == resendMessage {
		h.cancel()
	}
	return h.records.Handle(ctx, r)
}
