package batch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// BenchmarkBuildTransaction100 is the allocation profile of building and
// encoding a 100-operation transaction.
func BenchmarkBuildTransaction100(b *testing.B) {
	vals := make([]*Event, 100)
	for i := range vals {
		vals[i] = ev("p", i)
	}
	codec := &table.Codec{}
	b.ReportAllocs()
	for b.Loop() {
		tx := batch.NewTransaction(&batch.TransactionOptions{Codec: codec})
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

type loadRow struct {
	table.Meta
	Payload string
	N       int
}

func loadRows() []*loadRow {
	rows := make([]*loadRow, loadEntities)
	for i := range rows {
		rows[i] = &loadRow{Meta: table.Meta{PartitionKey: fmt.Sprintf("p%02d", i%loadPartitions), RowKey: keys.Uint64(uint64(i))},
			Payload: "the quick brown fox jumps over the lazy dog", N: i}
	}
	return rows
}

func freshTable(b *testing.B, svc *aztables.ServiceClient) *aztables.Client {
	b.StopTimer()
	defer b.StartTimer()
	name := testenv.UniqueName("bench")
	if _, err := svc.CreateTable(context.Background(), name, nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = svc.DeleteTable(context.Background(), name, nil) })
	return svc.NewClient(name)
}

func reportRate(b *testing.B, start time.Time, n int) {
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "entities/s")
}

// BenchmarkBulkLoad loads 20,000 entities over 20 partitions into Azurite
// three ways in one run. Run with -benchtime 1x (see BENCHMARKS.md).
func BenchmarkBulkLoad(b *testing.B) {
	svc := testenv.TableService(b)
	ctx := context.Background()
	rows := loadRows()
	var codec table.Codec

	b.Run("PerEntityAdd", func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			client := freshTable(b, svc)
			for _, r := range rows {
				body, err := codec.Marshal(r)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := client.AddEntity(ctx, body, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportRate(b, start, len(rows))
	})

	b.Run("HandLoopSubmitTransaction", func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			client := freshTable(b, svc)
			byPK := map[string][]aztables.TransactionAction{}
			var order []string
			for _, r := range rows {
				body, err := codec.Marshal(r)
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := byPK[r.PartitionKey]; !ok {
					order = append(order, r.PartitionKey)
				}
				byPK[r.PartitionKey] = append(byPK[r.PartitionKey], aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: body})
			}
			for _, pk := range order {
				acts := byPK[pk]
				for i := 0; i < len(acts); i += 100 {
					if _, err := client.SubmitTransaction(ctx, acts[i:min(i+100, len(acts))], nil); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		reportRate(b, start, len(rows))
	})

	for _, par := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("Writer/parallelism=%d", par), func(b *testing.B) {
			start := time.Now()
			for b.Loop() {
				client := freshTable(b, svc)
				ops := make([]batch.Op, len(rows))
				for i, r := range rows {
					ops[i] = batch.Add(r)
				}
				sum, err := batch.NewWriter(client, &batch.WriterOptions{Parallelism: par, Codec: &codec}).Write(ctx, batch.Slice(ops))
				if err != nil || sum.Operations != len(rows) {
					b.Fatalf("%+v %v", sum, err)
				}
			}
			reportRate(b, start, len(rows))
		})
	}
}
