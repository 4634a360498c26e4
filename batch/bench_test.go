package batch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/benchkit"
	"github.com/tablekit/tablekit/internal/testenv"
)

// BenchmarkBuildTransaction100 is the allocation profile of building and
// encoding a 100-operation transaction.
func BenchmarkBuildTransaction100(b *testing.B) {
	vals := make([]*Event, 100)
	for i := range vals {
		vals[i] = ev("p", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		tx := batch.NewTransaction(nil)
		for _, v := range vals {
			if err := tx.Append(batch.Add(v)); err != nil {
				b.Fatal(err)
			}
		}
		_ = tx.Actions()
	}
}

const (
	loadEntities   = 20000
	loadPartitions = 20
)

func reportRate(b *testing.B, start time.Time, n int) {
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "entities/s")
}

// BenchmarkBulkLoad loads 20,000 entities over 20 partitions into Azurite
// three ways in one run (scenarios in internal/benchkit, shared with
// tools/bench). Run with -benchtime 1x (see BENCHMARKS.md).
func BenchmarkBulkLoad(b *testing.B) {
	acct, err := benchkit.NewAccount(testenv.ConnectionString(b))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	rows := benchkit.Rows(loadEntities, loadPartitions)
	way := func(name string, load func(*aztables.Client) error) {
		b.Run(name, func(b *testing.B) {
			start := time.Now()
			for b.Loop() {
				b.StopTimer()
				client, drop, err := acct.NewTable(ctx, "bench")
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := load(client); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				drop()
				b.StartTimer()
			}
			reportRate(b, start, len(rows))
		})
	}
	way("PerEntityAdd", func(c *aztables.Client) error { return benchkit.LoadPerEntity(ctx, c, rows) })
	way("HandLoopSubmitTransaction", func(c *aztables.Client) error { return benchkit.LoadHandLoop(ctx, c, rows) })
	for _, par := range []int{1, 2, 4, 8} {
		way(fmt.Sprintf("Writer/parallelism=%d", par), func(c *aztables.Client) error { return benchkit.LoadWriter(ctx, c, rows, par) })
	}
}
