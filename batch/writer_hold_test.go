package batch_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// heldClient records each transaction as it starts and holds it until
// release is closed, so that a test inside a synctest bubble can look at
// what the Writer has sent at the moment every one of its goroutines waits.
type heldClient struct {
	table.Client
	release chan struct{}
	mu      sync.Mutex
	started []int // operations of each transaction, in the order they started
}

func (h *heldClient) SubmitTransaction(ctx context.Context, actions []aztables.TransactionAction, _ *aztables.SubmitTransactionOptions) (aztables.TransactionResponse, error) {
	h.mu.Lock()
	h.started = append(h.started, len(actions))
	h.mu.Unlock()
	select {
	case <-h.release:
		return aztables.TransactionResponse{}, nil
	case <-ctx.Done():
		return aztables.TransactionResponse{}, ctx.Err()
	}
}

func (h *heldClient) startedSoFar() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.started...)
}

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
			Parallelism:      maxParallelism,
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

// TestWriterSendsNothingMoreAfterAnOperationThatCanNeverBeSent: an
// operation the service could never accept (a '/' in its PartitionKey)
// ends the write with an *OpError naming it, and nothing more is sent: the
// transaction already in flight finishes, a full transaction waiting for a
// sender is dropped, and the partial ones are not flushed. Summary.Skipped
// counts every operation read and not sent.
func TestWriterSendsNothingMoreAfterAnOperationThatCanNeverBeSent(t *testing.T) {
	deadline(t, writerDeadline)
	synctest.Test(t, func(t *testing.T) {
		client := &heldClient{release: make(chan struct{})}
		w := batch.NewWriter(client, &batch.WriterOptions{Parallelism: 1, IdleFlushOps: -1})
		// 101 operations in each of two partitions: each partition's first
		// 100 fill a transaction, which the 101st closes. The first goes to
		// the one sender and is held there; the second waits for it.
		var input []batch.Op
		for _, pk := range []string{"a", "b"} {
			for i := range batch.MaxOperations + 1 {
				input = append(input, batch.Add(ev(pk, i)))
			}
		}
		bad := len(input)
		input = append(input, batch.Add(&Event{Meta: table.Meta{PartitionKey: "c/d", RowKey: keyrules.Uint64(0)}}))
		input = append(input, batch.Add(ev("e", 0)))
		var seq iter.Seq[batch.Op] = func(yield func(batch.Op) bool) {
			for _, op := range input {
				if !yield(op) {
					return
				}
			}
		}
		var sum batch.Summary
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			sum, err = w.Write(t.Context(), seq, nil)
		}()
		// Every goroutine now waits: the sender on the held transaction,
		// Write for its senders, the input having stopped at the bad one.
		synctest.Wait()
		close(client.release)
		<-done
		var oe *batch.OpError
		if !errors.As(err, &oe) || oe.Index != bad || !errors.Is(err, keys.ErrInvalidKey) {
			t.Fatalf("write error %v, want an *OpError at operation %d wrapping keys.ErrInvalidKey", err, bad)
		}
		if got := client.startedSoFar(); len(got) != 1 || got[0] != batch.MaxOperations {
			t.Errorf("sent %v, want only the transaction in flight when the bad operation was read ([%d])", got, batch.MaxOperations)
		}
		// Read and not sent: b's queued 100, and a's and b's 101st.
		if sum.Operations != batch.MaxOperations || sum.Skipped != batch.MaxOperations+2 {
			t.Errorf("summary %+v, want %d operations committed and %d skipped", sum, batch.MaxOperations, batch.MaxOperations+2)
		}
	})
}
