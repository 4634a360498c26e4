package batch_test

import (
	"errors"
	"testing"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
)

// An empty transaction is refused before any request, as operation 0.
func TestEmptyTransactionIsOperationZero(t *testing.T) {
	svc := fake.NewTableService(nil)
	client := svc.NewClient("Empty", nil)
	_, err := batch.NewTransaction(nil).Submit(t.Context(), client, nil)
	var oe *batch.OpError
	if !errors.As(err, &oe) || oe.Index != 0 || !errors.Is(err, batch.ErrEmpty) {
		t.Fatalf("Submit of an empty transaction: %v, want *OpError{Index: 0} with ErrEmpty", err)
	}
	if n := svc.Count(fake.OpBatch); n != 0 {
		t.Fatalf("%d batches reached the service", n)
	}
}
