package consistency_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/benchkit"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/table"
)

type employee struct {
	table.Meta
	Name string
}

// BenchmarkArchive moves 500 entities from Current to Archive through the
// queue on Azurite, timing the workers' drain (scenario in
// internal/benchkit, shared with tools/bench). Run with -benchtime 1x.
func BenchmarkArchive(b *testing.B) {
	acct, err := benchkit.NewAccount(testenv.ConnectionString(b))
	if err != nil {
		b.Fatal(err)
	}
	const n = 500
	cases := []struct {
		name                 string
		workers, concurrency int
	}{{"concurrency=1", 1, 1}, {"concurrency=4", 1, 4}, {"concurrency=16", 1, 16}, {"2_workers_x_16", 2, 16}}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var elapsed time.Duration
			requests := 0
			for b.Loop() {
				took, err := acct.Archive(context.Background(), n, tc.workers, tc.concurrency)
				if err != nil {
					b.Fatal(err)
				}
				elapsed += took
				requests += acct.Ledger.Total() - 1 // less the check query
			}
			b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(requests)/float64(n*b.N), "req/entity")
		})
	}
}

// BenchmarkArchiveRoundTrip is BenchmarkArchive with 5 ms added to every
// request, as a network round trip to a real account would: concurrency
// then hides latency instead of queueing on the emulator's CPU.
func BenchmarkArchiveRoundTrip(b *testing.B) {
	acct, err := benchkit.NewAccount(testenv.ConnectionString(b))
	if err != nil {
		b.Fatal(err)
	}
	acct.SetRoundTrip(5 * time.Millisecond)
	const n = 500
	for _, conc := range []int{1, 16} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			var elapsed time.Duration
			for b.Loop() {
				took, err := acct.Archive(context.Background(), n, 1, conc)
				if err != nil {
					b.Fatal(err)
				}
				elapsed += took
			}
			b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "msgs/s")
		})
	}
}

// BenchmarkAzuriteCeiling measures the emulator itself: point reads of one
// entity at concurrency 1 and 16, the same machine and run. It bounds what
// any client can gain from concurrency here.
func BenchmarkAzuriteCeiling(b *testing.B) {
	svc := testenv.TableService(b)
	name := testenv.UniqueName("benchceil")
	if _, err := svc.CreateTable(context.Background(), name, nil); err != nil {
		b.Fatal(err)
	}
	defer svc.DeleteTable(context.Background(), name, nil)
	client := svc.NewClient(name)
	tb, _ := table.New[employee](client, nil)
	if err := tb.Add(context.Background(), &employee{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}}, nil); err != nil {
		b.Fatal(err)
	}
	const reads = 4000
	for _, conc := range []int{1, 16} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			var elapsed time.Duration
			for b.Loop() {
				start := time.Now()
				var wg sync.WaitGroup
				per := reads / conc
				for g := 0; g < conc; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < per; i++ {
							if _, err := client.GetEntity(context.Background(), "p", "r", nil); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				elapsed += time.Since(start)
			}
			b.ReportMetric(float64(reads*b.N)/elapsed.Seconds(), "req/s")
		})
	}
}
