package consistency_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"

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

// TestDrainErrorIsRedacted reproduces issue 29's missed site: a Drain whose
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
