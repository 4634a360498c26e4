package benchkit

import (
	"context"
	"fmt"
	"iter"
	"os"
	"runtime"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/ledger"
	"github.com/tablekit/tablekit/table"
)

// PeakHeap runs f while sampling the heap in use every 10 ms and returns
// the highest sample above what was in use before f started.
func PeakHeap(f func() error) (uint64, error) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > base && m.HeapInuse-base > peak.Load() {
					peak.Store(m.HeapInuse - base)
				}
			}
		}
	}()
	err := f()
	close(done)
	return peak.Load(), err
}

// Generated yields n add operations over parts partitions, made as they
// are consumed: nothing is held in memory ahead of the writer.
func Generated(n, parts int) iter.Seq[batch.Op] {
	return func(yield func(batch.Op) bool) {
		for i := 0; i < n; i++ {
			r := &Row{Meta: table.Meta{PartitionKey: fmt.Sprintf("p%02d", i%parts), RowKey: keyrules.Uint64(uint64(i))},
				Payload: "the quick brown fox jumps over the lazy dog", N: i}
			if !yield(batch.Add(r)) {
				return
			}
		}
	}
}

// WriterGrowth is what one streamed bulk load cost.
type WriterGrowth struct {
	PeakHeap     uint64        // heap in use above the start, sampled every 10 ms
	FirstRequest int           // entities handed to the writer when its first transaction request left
	Requests     int           // transaction requests
	Took         time.Duration // wall time
}

// WriterGrowthOptions choose how MeasureWriter writes.
type WriterGrowthOptions struct {
	// HeapProfile, when set, is a file that receives a heap profile (as of
	// the last collection) once half the input has been handed over: where
	// the heap in use goes while the writer runs at its steady state.
	HeapProfile string
	// MaxBufferedBytes is WriterOptions.MaxBufferedBytes (0: its default).
	MaxBufferedBytes int
}

// MeasureWriter streams n generated entities over parts partitions (round
// robin, the order that keeps partitions open longest) through a Writer
// with default options (but those of opts), on client: the default path
// when client is an Account.KitClient, the SDK's SubmitTransaction when it
// is a plain one.
func (a *Account) MeasureWriter(ctx context.Context, client *aztables.Client, n, parts int, opts *WriterGrowthOptions) (WriterGrowth, error) {
	var o WriterGrowthOptions
	if opts != nil {
		o = *opts
	}
	var g WriterGrowth
	a.Ledger.Reset()
	batches := func() int { return a.Ledger.Operation(ledger.Table, "Batch") }
	handed := 0
	var profErr error
	ops := func(yield func(batch.Op) bool) {
		for op := range Generated(n, parts) {
			if g.FirstRequest == 0 && batches() > 0 {
				g.FirstRequest = handed
			}
			if o.HeapProfile != "" && handed == n/2 {
				profErr = writeHeapProfile(o.HeapProfile)
			}
			handed++
			if !yield(op) {
				return
			}
		}
	}
	start := time.Now()
	peak, err := PeakHeap(func() error {
		sum, err := batch.NewWriter(client, &batch.WriterOptions{MaxBufferedBytes: o.MaxBufferedBytes}).Write(ctx, ops, nil)
		if err == nil && sum.Operations != n {
			err = fmt.Errorf("wrote %d of %d", sum.Operations, n)
		}
		g.Requests = sum.Requests
		return err
	})
	g.Took, g.PeakHeap = time.Since(start), peak
	if g.FirstRequest == 0 {
		g.FirstRequest = n // nothing left before the input ended
	}
	if err == nil {
		err = profErr
	}
	return g, err
}

// writeHeapProfile writes the heap profile to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// StreamLoad writes n generated entities with the bulk writer.
func StreamLoad(ctx context.Context, client *aztables.Client, n, parts int) error {
	sum, err := batch.NewWriter(client, nil).Write(ctx, Generated(n, parts), nil)
	if err == nil && sum.Operations != n {
		err = fmt.Errorf("wrote %d of %d", sum.Operations, n)
	}
	return err
}

// Scan reads a partition through the iterator, keeping nothing.
func Scan(ctx context.Context, client *aztables.Client, pk string) (int, error) {
	tb, err := table.New[Row](client, nil)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, err := range tb.Query(ctx, &table.QueryOptions{Filter: table.Partition(pk)}) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
