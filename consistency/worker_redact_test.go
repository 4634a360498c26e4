package consistency_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/consistency"
)

// sasSignature is the secret part of the SAS token the refused clients carry.
const sasSignature = "c2VjcmV0LXNpZ25hdHVyZQ%3D%3D"

// refusedQueue is a SAS-authenticated queue client whose endpoint refuses
// connections: every request fails below HTTP with a *url.Error whose text
// holds the full URL, signature included.
func refusedQueue(t *testing.T, name string) *azqueue.QueueClient {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now: connections are refused
	u := fmt.Sprintf("http://%s/devstoreaccount1/%s?sv=2023-11-03&ss=q&srt=sco&sp=raup&se=2099-01-01T00%%3A00%%3A00Z&sig=%s", addr, name, sasSignature)
	q, err := azqueue.NewQueueClientWithNoCredential(u, &azqueue.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestDrainErrorIsRedacted checks the site once missed: a Drain whose
// dequeue is refused returned the dequeue's *url.Error as it was, so its
// Error() carried the SAS signature, while the log line of the same
// failure was redacted.
func TestDrainErrorIsRedacted(t *testing.T) {
	var logs bytes.Buffer
	w := consistency.NewWorker(refusedQueue(t, "work"), refusedQueue(t, "poison"),
		&consistency.WorkerOptions{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	_, err := w.Drain(t.Context(), nil)
	if err == nil {
		t.Fatal("Drain of a refused queue succeeded")
	}
	for _, where := range []string{err.Error(), fmt.Sprintf("%+v", err), logs.String()} {
		if strings.Contains(where, "sig=c2Vj") || strings.Contains(where, sasSignature) {
			t.Errorf("signature in %q", where)
		}
	}
	if !strings.Contains(err.Error(), "sig=REDACTED") {
		t.Errorf("Drain's error %q does not show where the signature was", err)
	}
}

// TestPoisonRecordIsRedacted: a handler that returns a transport error as
// the SDK made it (its text holds the SAS URL) leaves the signature in no
// record the worker writes: the retried message's LastError, the poison
// record, the FailureReport, the log, and the errors OnRetried and
// OnPoisoned receive.
func TestPoisonRecordIsRedacted(t *testing.T) {
	_, q, p := queues(t)
	var logs bytes.Buffer
	var seen []string
	w := consistency.NewWorker(q, p, &consistency.WorkerOptions{
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)), MaxDequeues: 2,
		Backoff:     func(int64) time.Duration { return 0 },
		OnRetried:   func(_ *consistency.Message, err error) { seen = append(seen, err.Error()) },
		OnPoisoned:  func(_ *consistency.Message, _ string, err error) { seen = append(seen, err.Error()) },
		Concurrency: 1,
	})
	_, refused := refusedQueue(t, "other").GetProperties(t.Context(), nil)
	if refused == nil || !strings.Contains(refused.Error(), "sig=c2Vj") {
		t.Fatalf("the refused client's error does not carry the signature: %v", refused)
	}
	_ = w.Handle("leak.v1", func(ctx context.Context, m *consistency.Message) error { return refused })
	if err := consistency.NewSender(q, nil).Send(t.Context(), "leak.v1", "k", 1, nil); err != nil {
		t.Fatal(err)
	}
	var report error
	for i := 0; i < 3; i++ {
		_, err := w.Drain(t.Context(), nil)
		report = errors.Join(report, err)
	}
	pk, err := p.PeekMessages(t.Context(), nil)
	if err != nil || len(pk.Messages) != 1 {
		t.Fatalf("poison queue: %v %v", pk, err)
	}
	record := *pk.Messages[0].MessageText
	if !strings.Contains(record, "REDACTED") {
		t.Errorf("the poison record does not hold the redacted error: %s", record)
	}
	for _, where := range append([]string{record, report.Error(), fmt.Sprintf("%+v", report), logs.String()}, seen...) {
		if strings.Contains(where, "sig=c2Vj") || strings.Contains(where, sasSignature) {
			t.Errorf("signature in %q", where)
		}
	}
	if len(seen) != 3 {
		t.Errorf("callbacks saw %d errors, want two retries (MaxDequeues 2) and a poisoning", len(seen))
	}
}
