package batch_test

import (
	"fmt"
	"testing"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/benchkit"
)

// BenchmarkWriterPeakHeap1M is the Writer's memory goal as written: the bulk
// writer's peak heap for 1,000,000 generated entities over 100,000
// partitions (round robin), default options, on a client built as the
// README builds it (tablekit's policy) over a canned transport: the
// writer's own memory, without a service whose store would count in the
// heap (an in-process fake would hold the million entities). Run with
// -benchtime 1x; `scripts/bench -writer-growth 1000000x100000` measures
// the same on Azurite.
func BenchmarkWriterPeakHeap1M(b *testing.B) {
	const n, parts = 1_000_000, 100_000
	client := cannedClient(b, true)
	var worst uint64
	var requests int
	for b.Loop() {
		peak, err := benchkit.PeakHeap(func() error {
			sum, err := batch.NewWriter(client, nil).Write(b.Context(), benchkit.Generated(n, parts), nil)
			if err == nil && sum.Operations != n {
				err = fmt.Errorf("wrote %d of %d", sum.Operations, n)
			}
			requests = sum.Transactions
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		worst = max(worst, peak)
	}
	b.ReportMetric(float64(worst)/(1<<20), "peak-MiB")
	b.ReportMetric(float64(requests), "transactions")
}
