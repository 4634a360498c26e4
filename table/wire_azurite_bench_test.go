package table_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/benchkit"
	"github.com/tablekit/tablekit/internal/seqs"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/table"
)

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkQueryWireAzurite reads 5,000 TenFields (5 pages) from Azurite:
// tablekit's Query on the SDK path, on its own path (table.ClientOptions),
// and the SDK's pager with encoding/json into a struct. It reports wall
// time and this process's CPU (getrusage; Azurite's is not in it) per
// entity. Run under scripts/azurite run with -benchtime 3x -count 5.
func BenchmarkQueryWireAzurite(b *testing.B) {
	cs := testenv.ConnectionString(b)
	ctx := context.Background()
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
	const n = 5000
	name := fmt.Sprintf("wireq%d", time.Now().UnixNano())
	plain := service(false)
	if _, err := plain.CreateTable(ctx, name, nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = plain.DeleteTable(context.Background(), name, nil) })
	var ops []batch.Op
	for i := range n {
		v := benchkit.Ten
		v.RowKey = fmt.Sprintf("r%05d", i)
		ops = append(ops, batch.Add(&v))
	}
	if _, err := batch.NewWriter(plain.NewClient(name), nil).Write(ctx, slices.Values(ops), nil); err != nil {
		b.Fatal(err)
	}
	measure := func(b *testing.B, read func() (int, error)) {
		var wall, cpu time.Duration
		for b.Loop() {
			t0, c0 := time.Now(), processCPU()
			got, err := read()
			if err != nil || got != n {
				b.Fatalf("%d entities, %v", got, err)
			}
			wall, cpu = wall+time.Since(t0), cpu+processCPU()-c0
		}
		b.ReportMetric(float64(wall.Microseconds())/float64(b.N*n), "wall-µs/entity")
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*n), "cpu-µs/entity")
	}
	for _, side := range []struct {
		name string
		wire bool
	}{{"tablekit-sdk-path", false}, {"tablekit-own-path", true}} {
		b.Run(side.name, func(b *testing.B) {
			tb, err := table.New[benchkit.TenFields](service(side.wire).NewClient(name), nil)
			if err != nil {
				b.Fatal(err)
			}
			measure(b, func() (int, error) {
				all, err := seqs.Collect(tb.Query(ctx, nil))
				return len(all), err
			})
		})
	}
	b.Run("raw-pager+encoding/json", func(b *testing.B) {
		client := plain.NewClient(name)
		measure(b, func() (int, error) {
			var out []*handTen
			pager := client.NewListEntitiesPager(nil)
			for pager.More() {
				page, err := pager.NextPage(ctx)
				if err != nil {
					return 0, err
				}
				for _, e := range page.Entities {
					v := new(handTen)
					if err := json.Unmarshal(e, v); err != nil {
						return 0, err
					}
					out = append(out, v)
				}
			}
			return len(out), nil
		})
	})
}
