package batch_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/wirepolicy"
	"github.com/tablekit/tablekit/table"
)

// flakyBatch answers the first try with 503 and later ones as cannedBatch,
// recording every body it received.
type flakyBatch struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (f *flakyBatch) Do(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	first := len(f.bodies) == 1
	f.mu.Unlock()
	if first {
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	return cannedBatch{}.Do(req)
}

// The policy runs per call: the SDK's retry resends tablekit's own body
// (not the placeholder), and the transaction succeeds after one retry,
// two tries in all; the quoted key is doubled in the URL only.
func TestWireTransactionRetriesSendTheOwnBody(t *testing.T) {
	f := &flakyBatch{}
	opts := &aztables.ClientOptions{}
	opts.Transport = f
	opts.Retry.RetryDelay, opts.Retry.MaxRetryDelay = time.Millisecond, time.Millisecond
	client, err := aztables.NewClientWithNoCredential("http://127.0.0.1/devstoreaccount1/Bench", table.ClientOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	e := &table.Entity{Meta: table.Meta{PartitionKey: "O'Brien", RowKey: "r"}}
	e.Set("Name", table.ValueOf("O'Brien"))
	tx := batch.NewTransaction(nil)
	if err := tx.Append(batch.Update(e, aztables.UpdateModeMerge).IfMatch(azcore.ETagAny)); err != nil {
		t.Fatal(err)
	}
	res, err := tx.Submit(t.Context(), client, nil)
	if err != nil || len(res.ETags) != 1 || res.ETags[0] == "" {
		t.Fatalf("%v %v", res, err)
	}
	if len(f.bodies) != 2 {
		t.Fatalf("%d tries, want 2", len(f.bodies))
	}
	for i, b := range f.bodies {
		if !bytes.Contains(b, []byte("PATCH http://127.0.0.1/devstoreaccount1/Bench(PartitionKey='O%27%27Brien',RowKey='r') HTTP/1.1")) ||
			!bytes.Contains(b, []byte(`"PartitionKey":"O'Brien"`)) || !bytes.Contains(b, []byte("If-Match: *")) || bytes.Contains(b, []byte("DELETE")) {
			t.Errorf("try %d sent:\n%s", i+1, b)
		}
	}
}

// seen records the requests that reach the transport and whether their
// context was already done (net/http's transport refuses those unsent).
type seen struct {
	mu        sync.Mutex
	n, doneAt int
}

func (s *seen) Do(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if req.Context().Err() != nil {
		s.doneAt++
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// wirepolicy.HasPath asks the policy without a request; on a client without
// it the probe's context is already cancelled, so a transport that honours
// the context (net/http's does) sends nothing.
func TestHasPathSendsNothing(t *testing.T) {
	s := &seen{}
	opts := &aztables.ClientOptions{}
	opts.Transport = s
	wired, err := aztables.NewClientWithNoCredential("http://127.0.0.1/devstoreaccount1/Bench", table.ClientOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	if !wirepolicy.HasPath(wired) || s.n != 0 {
		t.Fatalf("HasPath of a client with the policy: %d requests reached the transport", s.n)
	}
	plain, err := aztables.NewClientWithNoCredential("http://127.0.0.1/devstoreaccount1/Bench", opts)
	if err != nil {
		t.Fatal(err)
	}
	if wirepolicy.HasPath(plain) || s.n != s.doneAt {
		t.Fatalf("HasPath of a plain client: %d requests reached the transport, %d of them with a live context", s.n, s.n-s.doneAt)
	}
}
