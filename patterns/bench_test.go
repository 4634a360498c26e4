package patterns_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
	"github.com/tablekit/tablekit/table"
)

type emp struct {
	table.Meta
	LastName string
}

// BenchmarkIndexEntityAdds adds entities that share one last name, so every
// writer races for the same index entity, with 1, 8 and 32 writers against
// Azurite. Run with -benchtime 1x (see BENCHMARKS.md).
func BenchmarkIndexEntityAdds(b *testing.B) {
	svc := testenv.TableService(b)
	const adds = 256
	for _, writers := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			var attempts atomic.Int64
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				name := testenv.UniqueName("benchidx")
				if _, err := svc.CreateTable(context.Background(), name, nil); err != nil {
					b.Fatal(err)
				}
				ix, _ := patterns.NewIndexEntities[emp](svc.NewClient(name), "lname_", func(e *emp) string { return e.LastName }, nil)
				b.StartTimer()
				start := time.Now()
				var wg sync.WaitGroup
				var next atomic.Int64
				for w := 0; w < writers; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1) - 1
							if i >= adds {
								return
							}
							st, err := ix.Add(context.Background(), &emp{Meta: table.Meta{PartitionKey: "Sales", RowKey: fmt.Sprintf("%06d", i)}, LastName: "Jones"})
							if err != nil {
								b.Error(err)
								return
							}
							attempts.Add(int64(st.Attempts))
						}
					}()
				}
				wg.Wait()
				elapsed += time.Since(start)
				b.StopTimer()
				ids, err := ix.Lookup(context.Background(), "Sales", "Jones")
				if err != nil || len(ids) != adds {
					b.Fatalf("%d IDs in the index, want %d (%v)", len(ids), adds, err)
				}
				_, _ = svc.DeleteTable(context.Background(), name, nil)
				b.StartTimer()
			}
			b.ReportMetric(float64(adds*b.N)/elapsed.Seconds(), "adds/s")
			b.ReportMetric(float64(attempts.Load()-int64(adds*b.N))/float64(adds*b.N), "retries/add")
		})
	}
}

// BenchmarkShardedRead reads 8 shards of 1,000 entities from Azurite merged
// in key order: in parallel (Sharded.Read) against one shard after another.
func BenchmarkShardedRead(b *testing.B) {
	svc := testenv.TableService(b)
	name := testenv.UniqueName("benchshard")
	if _, err := svc.CreateTable(context.Background(), name, nil); err != nil {
		b.Fatal(err)
	}
	defer svc.DeleteTable(context.Background(), name, nil)
	client := svc.NewClient(name)
	s, _ := patterns.NewSharded[emp](client, "events", 8)
	var ops []batch.Op
	for i := 0; i < 8000; i++ {
		pk := s.Partitions()[i%8]
		ops = append(ops, batch.Add(&emp{Meta: table.Meta{PartitionKey: pk, RowKey: keys.Uint64(uint64(i))}, LastName: "x"}))
	}
	if _, err := batch.NewWriter(client, nil).Write(context.Background(), batch.Slice(ops)); err != nil {
		b.Fatal(err)
	}
	tbl, _ := table.New[emp](client, nil)
	b.Run("parallel_merge", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for _, err := range s.Read(context.Background(), nil) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != 8000 {
				b.Fatal(n)
			}
		}
	})
	b.Run("one_shard_after_another", func(b *testing.B) {
		for b.Loop() {
			var all []*emp
			for _, pk := range s.Partitions() {
				part, err := table.Collect(tbl.Query(context.Background(), &table.QueryOptions{Filter: table.Partition(pk)}))
				if err != nil {
					b.Fatal(err)
				}
				all = append(all, part...)
			}
			slices.SortFunc(all, func(x, y *emp) int { return keys.Compare(x.RowKey, y.RowKey) })
			if len(all) != 8000 {
				b.Fatal(len(all))
			}
		}
	})
}
