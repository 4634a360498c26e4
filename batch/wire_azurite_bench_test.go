package batch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/benchkit"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/table"
)

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSubmitWireAzurite writes 2,000 rows over 20 partitions in
// 100-operation Add transactions, one at a time (concurrency 1 on every
// side), into Azurite: tablekit on the SDK path, on its own path, and
// hand-written SubmitTransaction with encoding/json. It reports wall time
// and this process's CPU (getrusage: Azurite's CPU is not in it) per
// entity. Run with -benchtime 3x -count 5 under scripts/azurite run; go
// test repeats each side -count times before the next, so the sides are
// not interleaved: compare them on a quiet machine, or read min/max.
func BenchmarkSubmitWireAzurite(b *testing.B) {
	cs := testenv.ConnectionString(b)
	ctx := context.Background()
	rows := benchkit.Rows(2000, 20)
	byPK := map[string][]*benchkit.Row{}
	var pks []string
	for _, r := range rows {
		if byPK[r.PartitionKey] == nil {
			pks = append(pks, r.PartitionKey)
		}
		byPK[r.PartitionKey] = append(byPK[r.PartitionKey], r)
	}
	service := func(wire bool) *aztables.ServiceClient {
		opts := &aztables.ClientOptions{}
		if wire {
			opts = table.ClientOptions(opts)
		}
		sc, err := aztables.NewServiceClientFromConnectionString(cs, opts)
		if err != nil {
			b.Fatal(err)
		}
		return sc
	}
	sides := []struct {
		name string
		wire bool
		load func(client *aztables.Client) error
	}{
		{"tablekit-sdk-path", false, nil},
		{"tablekit-own-path", true, nil},
		{"hand-SubmitTransaction+encoding/json", false, func(client *aztables.Client) error {
			for _, pk := range pks {
				actions := make([]aztables.TransactionAction, 0, 100)
				for _, r := range byPK[pk] {
					body, err := json.Marshal(handRow{PartitionKey: r.PartitionKey, RowKey: r.RowKey, Payload: r.Payload, NType: "Edm.Int64", N: int64(r.N)})
					if err != nil {
						return err
					}
					actions = append(actions, aztables.TransactionAction{ActionType: aztables.TransactionTypeAdd, Entity: body})
				}
				if _, err := client.SubmitTransaction(ctx, actions, nil); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for i := range sides[:2] {
		sides[i].load = func(client *aztables.Client) error {
			for _, pk := range pks {
				tx := batch.NewTransaction(nil)
				for _, r := range byPK[pk] {
					if err := tx.Append(batch.Add(r)); err != nil {
						return err
					}
				}
				if _, err := tx.Submit(ctx, client, nil); err != nil {
					return err
				}
			}
			return nil
		}
	}
	for _, s := range sides {
		b.Run(s.name, func(b *testing.B) {
			sc := service(s.wire)
			var wall, cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				name := fmt.Sprintf("wirebench%d", time.Now().UnixNano())
				if _, err := sc.CreateTable(ctx, name, nil); err != nil {
					b.Fatal(err)
				}
				client := sc.NewClient(name)
				b.StartTimer()
				t0, c0 := time.Now(), processCPU()
				if err := s.load(client); err != nil {
					b.Fatal(err)
				}
				wall, cpu = wall+time.Since(t0), cpu+processCPU()-c0
				b.StopTimer()
				_, _ = sc.DeleteTable(ctx, name, nil)
				b.StartTimer()
			}
			n := float64(b.N * len(rows))
			b.ReportMetric(float64(wall.Microseconds())/n, "wall-µs/entity")
			b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/entity")
		})
	}
}
