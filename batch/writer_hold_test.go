package batch_test

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/tablekit/tablekit/batch"
)

// oneTransactionSize is what one Add of v in a partition of its own costs
// the memory bound: the size of its transaction.
func oneTransactionSize(t *testing.T, v any) int {
	tx := batch.NewTransaction(nil)
	if err := tx.Append(batch.Add(v)); err != nil {
		t.Fatal(err)
	}
	return tx.Size()
}

// TestWriterFreesAQuarterOfTheBoundWhenItIsReached: input spread over many
// partitions fills the memory bound with partial transactions. When the
// next operation does not fit, the Writer sends the largest partial
// transactions until a quarter of the bound is freed, in one pass: not just
// one (the next operation would pay another pass at once), not all (each
// is a request more than a full transaction). Here every partial
// transaction is one operation of one size S and the bound is 40 S. Before
// each operation the input waits until the Writer's senders are idle, so
// what is sent while an operation is placed is what that operation caused:
// the 41st sends exactly 10 (a third would be 14, a fifth 8), and so does
// every 10th after it, as the freed quarter fills again.
func TestWriterFreesAQuarterOfTheBoundWhenItIsReached(t *testing.T) {
	deadline(t, writerDeadline)
	size := oneTransactionSize(t, ev("p000", 0))
	const fill, total = 40, 80
	synctest.Test(t, func(t *testing.T) {
		client := &sizeRecorder{}
		sent := func() int {
			client.mu.Lock()
			defer client.mu.Unlock()
			return len(client.lens)
		}
		w := batch.NewWriter(client, &batch.WriterOptions{
			Parallelism:      batch.MaxParallelism,
			MaxBufferedBytes: fill * size,
			IdleFlushOps:     -1,
		})
		// sentBefore[i] is how many transactions had been sent when the
		// input offered operation i.
		var sentBefore []int
		ops := func(yield func(batch.Op) bool) {
			for i := range total {
				synctest.Wait()
				sentBefore = append(sentBefore, sent())
				if !yield(batch.Add(ev(fmt.Sprintf("p%03d", i), 0))) {
					return
				}
			}
		}
		sum, err := w.Write(t.Context(), ops, nil)
		if err != nil || sum.Operations != total || sum.Transactions != total {
			t.Fatalf("write: %+v, %v; want %d operations in as many transactions", sum, err, total)
		}
		want := make([]int, total)
		for i := fill + 1; i < total; i++ {
			want[i] = (i - fill + 9) / 10 * fill / 4
		}
		if !slices.Equal(sentBefore, want) {
			t.Errorf("transactions sent before each operation:\n got %v\nwant %v\n(a bound of %d one-operation transactions; a quarter of it, %d, freed each time it is reached)", sentBefore, want, fill, fill/4)
		}
	})
}
