package consistency_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/consistency"
	"github.com/tablekit/tablekit/internal/reqcount"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

type employee struct {
	table.Meta
	Name string
}

// BenchmarkArchive moves 500 entities from Current to Archive through the
// queue on Azurite, timing the workers' drain. Run with -benchtime 1x.
func BenchmarkArchive(b *testing.B) {
	cs := testenv.ConnectionString(b)
	const n = 500
	cases := []struct {
		name                 string
		workers, concurrency int
	}{{"concurrency=1", 1, 1}, {"concurrency=4", 1, 4}, {"concurrency=16", 1, 16}, {"2_workers_x_16", 2, 16}}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var elapsed time.Duration
			tableReqs, queueReqs := 0, 0
			for b.Loop() {
				b.StopTimer()
				tc2, qc := &reqcount.Counter{}, &reqcount.Counter{}
				svc, err := aztables.NewServiceClientFromConnectionString(cs, tc2.TableOptions())
				if err != nil {
					b.Fatal(err)
				}
				var clients []*aztables.Client
				for _, base := range []string{"benchcur", "bencharc"} {
					name := testenv.UniqueName(base)
					if _, err := svc.CreateTable(context.Background(), name, nil); err != nil {
						b.Fatal(err)
					}
					defer svc.DeleteTable(context.Background(), name, nil)
					clients = append(clients, svc.NewClient(name))
				}
				current, _ := table.New[employee](clients[0], nil)
				archive, _ := table.New[employee](clients[1], nil)
				var ops []batch.Op
				for i := 0; i < n; i++ {
					ops = append(ops, batch.Add(&employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: keys.Uint64(uint64(i))}, Name: "x"}))
				}
				if _, err := batch.NewWriter(clients[0], nil).Write(context.Background(), batch.Slice(ops)); err != nil {
					b.Fatal(err)
				}
				qopts := &azqueue.ClientOptions{}
				qopts.PerRetryPolicies = append(qopts.PerRetryPolicies, qc)
				qname := testenv.UniqueName("benchq")
				q, _ := azqueue.NewQueueClientFromConnectionString(cs, qname, qopts)
				p, _ := azqueue.NewQueueClientFromConnectionString(cs, qname+"p", nil)
				_, _ = q.Create(context.Background(), nil)
				_, _ = p.Create(context.Background(), nil)
				defer q.Delete(context.Background(), nil)
				defer p.Delete(context.Background(), nil)
				mover := consistency.NewMover[employee](current, consistency.TableTarget[employee]{Table: archive}, consistency.NewSender(q, nil))
				for i := 0; i < n; i++ {
					if err := mover.Request(context.Background(), "Sales", keys.Uint64(uint64(i))); err != nil {
						b.Fatal(err)
					}
				}
				tc2.Reset()
				qc.Reset()
				var ws []*consistency.Worker
				for i := 0; i < tc.workers; i++ {
					w := consistency.NewWorker(q, p, &consistency.WorkerOptions{Concurrency: tc.concurrency})
					_ = w.Handle(mover.Type(), mover.Handle)
					ws = append(ws, w)
				}
				b.StartTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for _, w := range ws {
					wg.Add(1)
					go func() { defer wg.Done(); _, _ = w.Drain(context.Background()) }()
				}
				wg.Wait()
				elapsed += time.Since(start)
				b.StopTimer()
				left, _ := table.Collect(current.Query(context.Background(), nil))
				if len(left) != 0 {
					b.Fatalf("%d entities not moved", len(left))
				}
				tableReqs += tc2.N() - 1 // the check query
				queueReqs += qc.N()
				b.StartTimer()
			}
			b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(tableReqs)/float64(n*b.N), "table-req/entity")
			b.ReportMetric(float64(queueReqs)/float64(n*b.N), "queue-req/entity")
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
