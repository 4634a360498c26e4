package batch_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/table"
)

// TestWriterBoundCountsTheNextTransactionsEnvelope: the memory bound
// counts what an operation costs when its partition's open transaction is
// full: the operation opens a new transaction, envelope and all, while the
// full one waits for a sender. The bound is set one byte short of holding
// both, so the Writer must hand the full transaction over before it takes
// the 101st operation; counting the new operation without its envelope
// would hold one byte more than the bound.
func TestWriterBoundCountsTheNextTransactionsEnvelope(t *testing.T) {
	deadline(t, writerDeadline)
	op := func(i int) batch.Op {
		// Same size every time: fixed-width RowKey and N.
		return batch.Add(&Event{Meta: table.Meta{PartitionKey: "p", RowKey: fmt.Sprintf("r%05d", i)}, Payload: "x", N: 7})
	}
	size := opSize(t, op(0))
	envelope := batch.NewTransaction(nil).Size()
	budget := 2*envelope + (batch.MaxOperations+1)*size - 1
	ops := func(yield func(batch.Op) bool) {
		for i := range batch.MaxOperations + 50 {
			if !yield(op(i)) {
				return
			}
		}
	}
	w := batch.NewWriter(committingClient{}, &batch.WriterOptions{
		MaxBufferedBytes: budget,
		Parallelism:      1,
		IdleFlushOps:     -1, // no early send: the first transaction leaves full
	})
	sum, err := w.Write(t.Context(), ops, nil)
	if err != nil || sum.Operations != batch.MaxOperations+50 || sum.Transactions != 2 {
		t.Fatalf("write: %+v %v; want %d operations in 2 transactions", sum, err, batch.MaxOperations+50)
	}
	if sum.PeakBufferedBytes > budget {
		t.Errorf("held %d bytes at the peak, over the bound of %d (a full transaction of %d operations of %d bytes, and the next one's envelope of %d)",
			sum.PeakBufferedBytes, budget, batch.MaxOperations, size, envelope)
	}
}

// TestWriterFillsATransactionUpToTheBound: a bound that holds exactly one
// full transaction (its envelope and 100 operations) lets the Writer fill
// it: each operation that joins the open transaction costs its own size
// only, so the 100 operations leave in one request, not split early.
func TestWriterFillsATransactionUpToTheBound(t *testing.T) {
	deadline(t, writerDeadline)
	var ops []batch.Op
	for i := range batch.MaxOperations {
		ops = append(ops, batch.Add(&Event{Meta: table.Meta{PartitionKey: "p", RowKey: fmt.Sprintf("r%05d", i)}, Payload: "x", N: 7}))
	}
	budget := batch.NewTransaction(nil).Size() + batch.MaxOperations*opSize(t, ops[0])
	rec := &sizeRecorder{}
	w := batch.NewWriter(rec, &batch.WriterOptions{MaxBufferedBytes: budget, Parallelism: 1, IdleFlushOps: -1})
	sum, err := w.Write(t.Context(), slices.Values(ops), nil)
	if err != nil || sum.Operations != batch.MaxOperations {
		t.Fatalf("write: %+v %v", sum, err)
	}
	if len(rec.lens) != 1 || sum.PeakBufferedBytes != budget {
		t.Errorf("sent %v operations a request, peak %d bytes; want one request of %d at a peak of exactly the bound, %d",
			rec.lens, sum.PeakBufferedBytes, batch.MaxOperations, budget)
	}
}
