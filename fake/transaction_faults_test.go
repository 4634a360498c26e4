package fake_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
)

func addActions(rks ...string) []aztables.TransactionAction {
	var out []aztables.TransactionAction
	for _, rk := range rks {
		out = append(out, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd,
			Entity: []byte(`{"PartitionKey":"p","RowKey":"` + rk + `"}`)})
	}
	return out
}

// FailTransactionOperation answers the next n transactions 202 with the
// chosen operation failed (an index past the last names the last), writes
// none of their operations, and lets the SDK see the 202 (no retry of its
// own); the transaction after them commits.
func TestFailTransactionOperation(t *testing.T) {
	svc, c := newTable(t, nil)
	svc.ResetCounts()
	svc.FailTransactionOperation(7, 2, http.StatusServiceUnavailable, "ServerBusy")
	for range 2 {
		_, err := c.SubmitTransaction(t.Context(), addActions("a", "b", "c"), nil)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusAccepted {
			t.Fatalf("a failed operation inside a transaction: %v, want the SDK's 202 error", err)
		}
		body, perr := runtime.Payload(re.RawResponse)
		if perr != nil {
			t.Fatal(perr)
		}
		if !strings.Contains(string(body), "HTTP/1.1 503 Service Unavailable") || !strings.Contains(string(body), `"code":"ServerBusy"`) ||
			!strings.Contains(string(body), `"value":"2:`) {
			t.Fatalf("the answer does not name operation 2 as 503 ServerBusy:\n%s", body)
		}
	}
	if n := svc.Count(fake.OpBatch); n != 2 {
		t.Fatalf("%d batch requests, want 2: the SDK does not retry a 202", n)
	}
	pager := c.NewListEntitiesPager(nil)
	page, err := pager.NextPage(t.Context())
	if err != nil || len(page.Entities) != 0 {
		t.Fatalf("%d entities after two failed transactions, %v; want none", len(page.Entities), err)
	}
	if _, err := c.SubmitTransaction(t.Context(), addActions("a", "b", "c"), nil); err != nil {
		t.Fatalf("the transaction after the faults: %v", err)
	}
}

// A transaction the batch's own checks refuse does not use up a fault.
func TestFailTransactionOperationAfterTheBatchChecks(t *testing.T) {
	svc, c := newTable(t, nil)
	svc.FailTransactionOperation(0, 1, http.StatusTooManyRequests, "TooManyRequests")
	dup := addActions("a", "a")
	_, err := c.SubmitTransaction(t.Context(), dup, nil)
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("duplicate RowKey: %v", err)
	}
	body, _ := io.ReadAll(re.RawResponse.Body)
	if !strings.Contains(string(body), "InvalidDuplicateRow") && re.ErrorCode != "InvalidDuplicateRow" {
		t.Fatalf("duplicate RowKey answered %d %s", re.StatusCode, re.ErrorCode)
	}
	_, err = c.SubmitTransaction(t.Context(), addActions("x"), nil)
	if !errors.As(err, &re) || re.StatusCode != http.StatusAccepted {
		t.Fatalf("the fault did not apply to the next valid transaction: %v", err)
	}
}
