package batch_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/table"
)

// committingClient accepts every transaction without storing anything, so
// that the heap a test measures is the Writer's own. Its other methods are
// not called (the nil table.Client would panic if they were).
type committingClient struct{ table.Client }

func (committingClient) SubmitTransaction(context.Context, []aztables.TransactionAction, *aztables.SubmitTransactionOptions) (aztables.TransactionResponse, error) {
	return aztables.TransactionResponse{}, nil
}

// TestWriterForgetsFinishedPartitions: a long write over ever new
// partitions holds memory for the partitions with work queued or in
// flight, not for every partition it has seen. The live heap (after a
// collection) is taken early in the write and again near its end; between
// them the Writer finished tens of thousands of partitions, and the heap
// must not have grown by anything like a record per partition (a map entry
// with its key is more than 16 bytes).
func TestWriterForgetsFinishedPartitions(t *testing.T) {
	deadline(t, writerDeadline)
	const (
		parts       = 40_000
		early, late = 2_000, parts - 100
	)
	ops := func(yield func(batch.Op) bool) {
		for i := range parts {
			if !yield(batch.Add(ev(fmt.Sprintf("p%06d", i), i))) {
				return
			}
		}
	}
	liveHeap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var atEarly, atLate uint64
	w := batch.NewWriter(committingClient{}, &batch.WriterOptions{
		// One transaction at a time, and little read ahead: the partitions
		// with work queued or in flight stay few at both measurements.
		Parallelism:      1,
		MaxBufferedBytes: 8 << 10,
		Progress: func(s batch.Summary) {
			switch s.Transactions {
			case early:
				atEarly = liveHeap()
			case late:
				atLate = liveHeap()
			}
		},
	})
	sum, err := w.Write(t.Context(), ops, nil)
	if err != nil || sum.Operations != parts || sum.Transactions != parts {
		t.Fatalf("write: %+v %v", sum, err)
	}
	if atEarly == 0 || atLate == 0 {
		t.Fatalf("the heap was not measured (Progress at %d and %d transactions)", early, late)
	}
	grown := int64(atLate) - int64(atEarly)
	perPartition := float64(grown) / float64(late-early)
	t.Logf("live heap %d bytes after %d partitions, %d after %d: %.1f bytes a finished partition", atEarly, early, atLate, late, perPartition)
	if perPartition >= 16 {
		t.Errorf("the Writer's heap grew by %.1f bytes for each finished partition (%d bytes over %d partitions): it keeps partitions it has finished",
			perPartition, grown, late-early)
	}
}
