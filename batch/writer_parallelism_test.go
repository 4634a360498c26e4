package batch_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablekit/tablekit/batch"
)

// inFlight holds each transaction until `want` are in flight at once (or
// 5 s have passed), recording the most it saw together.
type inFlight struct {
	committingClient
	want      int
	mu        sync.Mutex
	cond      *sync.Cond
	now, most int
}

func (f *inFlight) SubmitTransaction(ctx context.Context, actions []aztables.TransactionAction, opts *aztables.SubmitTransactionOptions) (aztables.TransactionResponse, error) {
	f.mu.Lock()
	f.now++
	f.most = max(f.most, f.now)
	f.cond.Broadcast()
	limit := time.AfterFunc(5*time.Second, func() { f.mu.Lock(); f.cond.Broadcast(); f.mu.Unlock() })
	start := time.Now()
	for f.most < f.want && time.Since(start) < 5*time.Second {
		f.cond.Wait()
	}
	limit.Stop()
	f.now--
	f.mu.Unlock()
	return f.committingClient.SubmitTransaction(ctx, actions, opts)
}

// maxParallelism is the most transactions a Writer runs at once, as
// WriterOptions.Parallelism documents it.
const maxParallelism = 32

// TestWriterRunsUpToMaxParallelismAtOnce: Parallelism 32 runs 32
// transactions of different partitions at once, and a larger value is
// held to it, as documented.
func TestWriterRunsUpToMaxParallelismAtOnce(t *testing.T) {
	deadline(t, writerDeadline)
	for _, asked := range []int{maxParallelism, maxParallelism + 1} {
		t.Run(fmt.Sprint(asked), func(t *testing.T) {
			var ops []batch.Op
			for i := range 2 * maxParallelism {
				ops = append(ops, batch.Add(ev(fmt.Sprintf("p%02d", i), i)))
			}
			// Each transaction waits until 32 are in flight together (at
			// most 5 s): a Writer that ran fewer at once shows it in most.
			f := &inFlight{want: maxParallelism}
			f.cond = sync.NewCond(&f.mu)
			sum, err := batch.NewWriter(f, &batch.WriterOptions{Parallelism: asked, IdleFlushOps: -1}).Write(t.Context(), slices.Values(ops), nil)
			if err != nil || sum.Operations != len(ops) {
				t.Fatalf("write: %+v %v", sum, err)
			}
			if f.most != maxParallelism {
				t.Errorf("Parallelism %d: %d transactions in flight at most, want %d", asked, f.most, maxParallelism)
			}
		})
	}
}
