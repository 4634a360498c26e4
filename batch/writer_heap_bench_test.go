package batch_test

import (
	"fmt"
	"testing"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/benchkit"
)

// BenchmarkWriterPeakHeap is the bulk writer's peak heap (sampled every
// 10 ms above the start, benchkit.PeakHeap) for 100,000 generated entities
// over 10 to 100,000 partitions, round robin, with default options, on a
// canned transport: the writer's own memory, without the network or a
// service. `scripts/bench -writer-growth` measures the same on Azurite.
func BenchmarkWriterPeakHeap(b *testing.B) {
	const n = 100_000
	for _, parts := range []int{10, 1000, 100_000} {
		for _, wire := range []bool{false, true} {
			path := "sdk"
			if wire {
				path = "wire"
			}
			b.Run(fmt.Sprintf("%dx%d/%s", n, parts, path), func(b *testing.B) {
				client := cannedClient(b, wire)
				var worst uint64
				for b.Loop() {
					peak, err := benchkit.PeakHeap(func() error {
						sum, err := batch.NewWriter(client, nil).Write(b.Context(), benchkit.Generated(n, parts), nil)
						if err == nil && sum.Operations != n {
							err = fmt.Errorf("wrote %d of %d", sum.Operations, n)
						}
						return err
					})
					if err != nil {
						b.Fatal(err)
					}
					worst = max(worst, peak)
				}
				b.ReportMetric(float64(worst)/(1<<20), "peak-MiB")
			})
		}
	}
}
