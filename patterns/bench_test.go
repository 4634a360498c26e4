package patterns_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/internal/benchkit"
	"github.com/tablekit/tablekit/internal/testenv"
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
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				name := testenv.UniqueName("benchidx")
				if _, err := svc.CreateTable(context.Background(), name, nil); err != nil {
					b.Fatal(err)
				}
				ix := benchListModel(b, svc.NewClient(name))
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
							if err := ix.Add(context.Background(), &emp{Meta: table.Meta{PartitionKey: "Sales", RowKey: fmt.Sprintf("empid_%06d", i)}, LastName: "Jones"}, nil); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				elapsed += time.Since(start)
				b.StopTimer()
				ids, err := ix.IDs(context.Background(), "lastname", "Sales", "Jones", nil)
				if err != nil || len(ids) != adds {
					b.Fatalf("%d IDs in the index, want %d (%v)", len(ids), adds, err)
				}
				_, _ = svc.DeleteTable(context.Background(), name, nil)
				b.StartTimer()
			}
			b.ReportMetric(float64(adds*b.N)/elapsed.Seconds(), "adds/s")
		})
	}
}

// BenchmarkShardedRead reads 8 shards of 1,000 entities from Azurite merged
// in key order: in parallel (Sharded.Read) against one shard after another
// (scenarios in internal/benchkit, shared with tools/bench).
func BenchmarkShardedRead(b *testing.B) {
	acct, err := benchkit.NewAccount(testenv.ConnectionString(b))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	client, drop, err := acct.NewTable(ctx, "benchshard")
	if err != nil {
		b.Fatal(err)
	}
	defer drop()
	s, err := benchkit.ShardedTable(ctx, client, 8000, 8)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("parallel_merge", func(b *testing.B) {
		for b.Loop() {
			if n, err := benchkit.ReadMerged(ctx, s); err != nil || n != 8000 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("one_shard_after_another", func(b *testing.B) {
		for b.Loop() {
			if n, err := benchkit.ReadSequential(ctx, client, s); err != nil || n != 8000 {
				b.Fatal(n, err)
			}
		}
	})
}

// BenchmarkLookupEntities reads the 200 employees of one last name
// (Model.LookupEntities of a list: one index query, then point reads, 8
// at a time).
//
//	scripts/azurite run -- go test -run '^$' -bench LookupEntities -count 2 ./patterns/
func BenchmarkLookupEntities(b *testing.B) {
	svc := testenv.TableService(b)
	name := testenv.UniqueName("benchlookup")
	if _, err := svc.CreateTable(context.Background(), name, nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = svc.DeleteTable(context.Background(), name, nil) })
	const n = 200
	ix := benchListModel(b, svc.NewClient(name))
	for i := 0; i < n; i++ {
		if err := ix.Add(context.Background(), &emp{Meta: table.Meta{PartitionKey: "Sales", RowKey: fmt.Sprintf("empid_%06d", i)}, LastName: "Jones"}, nil); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		got, err := ix.LookupEntities(context.Background(), "lastname", "Sales", "Jones", nil)
		if err != nil || len(got) != n {
			b.Fatalf("%d entities, want %d (%v)", len(got), n, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "entities/s")
}

// benchListModel is a model of emp with a last-name list in the partition.
func benchListModel(b *testing.B, client table.Client) *patterns.Model[emp] {
	m, err := patterns.OpenModel(context.Background(), tableOf(table.New[emp](client, nil)), &patterns.ModelOptions[emp]{Name: "bench", Primary: "empid_",
		Lists: []patterns.ListDef[emp]{{Name: "lastname", Prefix: "lname_", Value: func(e *emp) string { return e.LastName }}}})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

type benchStaff struct {
	table.Meta
	FirstName, LastName, Email string
	Age                        int
}

// BenchmarkIntraPartitionAdd is the client-side cost of one
// model write with two same-partition copies (the entity and two copies, one transaction)
// against the in-memory fake: mostly encoding the copies. The fake's own
// work is included, the same before and after a change.
func BenchmarkIntraPartitionAdd(b *testing.B) {
	svc := fake.NewTableService(nil)
	client := svc.NewClient("bench", nil)
	if _, err := client.CreateTable(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	idx, err := patterns.OpenModel(context.Background(), tableOf(table.New[benchStaff](client, nil)), &patterns.ModelOptions[benchStaff]{Name: "idx", Primary: "empid_", Copies: []patterns.IndexDef[benchStaff]{
		{Name: "email", Prefix: "email_", Unique: true, Value: func(s *benchStaff) string { return s.Email }},
		{Name: "lname", Prefix: "lname_", Value: func(s *benchStaff) string { return s.LastName }, Project: []string{"FirstName", "LastName"}},
	}})

	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprintf("%06d", i)
		v := &benchStaff{Meta: table.Meta{PartitionKey: "Sales", RowKey: "empid_" + id}, FirstName: "Don", LastName: "Hall", Email: id + "@contoso.com", Age: 34}
		if err := idx.Add(context.Background(), v, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWidePut is one WideEntity write of 300 properties (two parts,
// one transaction) against the in-memory fake.
func BenchmarkWidePut(b *testing.B) {
	svc := fake.NewTableService(nil)
	client := svc.NewClient("bench", nil)
	if _, err := client.CreateTable(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	w := patterns.NewWideEntity(tableOf(table.New[table.Entity](client, nil)))
	props := map[string]any{}
	for d := 0; d < 300; d++ {
		props[fmt.Sprintf("D%03d", d)] = int64(d)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if err := w.Add(context.Background(), &patterns.Wide{PartitionKey: "p", RowKey: fmt.Sprint(i), Properties: props}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
