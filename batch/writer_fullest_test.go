package batch_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/table"
)

// sizeRecorder accepts every transaction, recording how many operations
// each carried, in the order they were sent.
type sizeRecorder struct {
	table.Client
	mu   sync.Mutex
	lens []int
}

func (r *sizeRecorder) SubmitTransaction(_ context.Context, actions []aztables.TransactionAction, _ *aztables.SubmitTransactionOptions) (aztables.TransactionResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lens = append(r.lens, len(actions))
	return aztables.TransactionResponse{}, nil
}

// TestWriterStartsOnTheFullestPartition: when IdleFlushOps operations wait
// in partial transactions and nothing has been sent, the Writer starts on
// the fullest partial transaction, not on any: here 40 operations of one
// partition and one operation in each of 60 others, so the first request
// carries the 40.
func TestWriterStartsOnTheFullestPartition(t *testing.T) {
	deadline(t, writerDeadline)
	var ops []batch.Op
	for i := range 40 {
		ops = append(ops, batch.Add(ev("big", i)))
	}
	for i := range 60 {
		ops = append(ops, batch.Add(ev(fmt.Sprintf("small%02d", i), i)))
	}
	rec := &sizeRecorder{}
	w := batch.NewWriter(rec, &batch.WriterOptions{Parallelism: 1, IdleFlushOps: len(ops)})
	sum, err := w.Write(t.Context(), slices.Values(ops), nil)
	if err != nil || sum.Operations != len(ops) || sum.Transactions != 61 {
		t.Fatalf("write: %+v %v; want %d operations in 61 transactions", sum, err, len(ops))
	}
	if rec.lens[0] != 40 {
		t.Errorf("the first request carried %d operations, want the fullest partition's 40 (sent: %v)", rec.lens[0], rec.lens)
	}
}
