package batch_test

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/trace"
)

// A transaction built with TransactionOptions.TracingProvider opens one
// Transaction.Submit span per Submit, over the SDK's HTTP span of its
// request, with its partition, operation count and outcome; batch.Submit
// takes the same options.
func TestTransactionSubmitSpan(t *testing.T) {
	var rec trace.Recorder
	opts := &aztables.ClientOptions{}
	opts.TracingProvider = rec.Provider()
	_, c := newFake(t, opts)
	txOpts := &batch.TransactionOptions{TracingProvider: rec.Provider()}

	tx := batch.NewTransaction(txOpts)
	for _, op := range []batch.Op{batch.Add(ev("a", 1)), batch.Add(ev("a", 2))} {
		if err := tx.Append(op); err != nil {
			t.Fatal(err)
		}
	}
	before := len(rec.Spans())
	if _, err := tx.Submit(t.Context(), c, nil); err != nil {
		t.Fatal(err)
	}
	s := checkSpan(t, rec.Spans(), before, "Transaction.Submit")
	if s.Parent != -1 || s.Status == tracing.SpanStatusError || s.Attributes[trace.AttrOutcome] != "ok" ||
		s.Attributes[trace.AttrOperations] != 2 || s.Attributes[trace.AttrPartition] != "a" {
		t.Errorf("span %+v: want a root, ok, 2 operations on partition a", s)
	}

	// The same Add again through batch.Submit: the service refuses it (409).
	before = len(rec.Spans())
	if _, err := batch.Submit(t.Context(), c, []batch.Op{batch.Add(ev("a", 1))}, txOpts); err == nil {
		t.Fatal("a second Add of the same entity succeeded")
	}
	s = checkSpan(t, rec.Spans(), before, "Transaction.Submit")
	if s.Status != tracing.SpanStatusError || s.Attributes[trace.AttrOutcome] != "error" || s.Attributes[trace.AttrOperations] != 1 {
		t.Errorf("span %+v: want error status and outcome, 1 operation", s)
	}
}

// Without a provider a transaction opens no span of tablekit's.
func TestTransactionWithoutProviderOpensNoSpan(t *testing.T) {
	var rec trace.Recorder
	opts := &aztables.ClientOptions{}
	opts.TracingProvider = rec.Provider()
	_, c := newFake(t, opts)
	before := len(rec.Spans())
	if _, err := batch.Submit(t.Context(), c, []batch.Op{batch.Add(ev("a", 1))}, nil); err != nil {
		t.Fatal(err)
	}
	spans := rec.Spans()[before:]
	if len(spans) == 0 {
		t.Fatal("no SDK span recorded: the test's client is not traced")
	}
	for _, s := range spans {
		if s.Name == "Transaction.Submit" {
			t.Errorf("span %+v opened without a provider", s)
		}
	}
}

// Plan configures each transaction it cuts by its TransactionOptions, as
// NewTransaction does: a planned transaction opens its Submit span.
func TestPlanTakesTransactionOptions(t *testing.T) {
	var rec trace.Recorder
	opts := &aztables.ClientOptions{}
	opts.TracingProvider = rec.Provider()
	_, c := newFake(t, opts)
	txs, err := batch.Plan([]batch.Op{batch.Add(ev("a", 1)), batch.Add(ev("b", 1))}, &batch.TransactionOptions{TracingProvider: rec.Provider()})
	if err != nil || len(txs) != 2 {
		t.Fatalf("plan: %d transactions, %v", len(txs), err)
	}
	for _, tx := range txs {
		before := len(rec.Spans())
		if _, err := tx.Submit(t.Context(), c, nil); err != nil {
			t.Fatal(err)
		}
		s := checkSpan(t, rec.Spans(), before, "Transaction.Submit")
		if s.Attributes[trace.AttrPartition] != tx.PartitionKey() || s.Attributes[trace.AttrOperations] != 1 {
			t.Errorf("span %+v: want partition %s, 1 operation", s, tx.PartitionKey())
		}
	}
}
