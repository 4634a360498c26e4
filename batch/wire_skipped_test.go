package batch_test

import (
	"context"
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/table"
)

// skippingClient answers reads through a client with tablekit's policy
// (so table.HasWirePath says yes) but sends transactions through one
// without it: the policy never sees them.
type skippingClient struct {
	*aztables.Client
	plain *aztables.Client
}

func (s skippingClient) SubmitTransaction(ctx context.Context, actions []aztables.TransactionAction, opts *aztables.SubmitTransactionOptions) (aztables.TransactionResponse, error) {
	return s.plain.SubmitTransaction(ctx, actions, opts)
}

// TestSkippedPolicyKeepsTheServiceError: when the client said it has
// tablekit's policy but the policy did not see the transaction, Submit
// fails at operation 0 saying so, and the service's answer to what was
// sent instead (the guarded placeholder, refused) stays in the chain as
// the *azcore.ResponseError; nothing is written.
func TestSkippedPolicyKeepsTheServiceError(t *testing.T) {
	svc, wired := newFake(t, nil)
	c := skippingClient{Client: wired, plain: plainFakeClient(t, svc, nil)}
	e := ev("O'Brien", 1)
	e.RowKey = "emp_O'Brien"
	_, err := batch.Submit(t.Context(), c, []batch.Op{batch.Upsert(e, aztables.UpdateModeMerge)}, nil)
	var oe *batch.OpError
	if !errors.As(err, &oe) || oe.Index != 0 || oe.PartitionKey != "O'Brien" {
		t.Fatalf("Submit: %v; want an *OpError at operation 0", err)
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Errorf("the service's answer is not in the chain: %v", err)
	}
	tb, _ := table.New[Event](wired, nil)
	if _, gerr := tb.Get(t.Context(), "O'Brien", "emp_O'Brien", nil); gerr == nil {
		t.Error("the entity was written")
	}
}
