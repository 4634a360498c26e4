package table_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/benchkit"
	"github.com/tablekit/tablekit/internal/testenv"
	"github.com/tablekit/tablekit/table"
)

// BenchmarkGetWireAzurite reads TenFields entities one at a time from
// Azurite: table.Get on its own path (table.ClientOptions) and GetEntity with
// encoding/json into a struct. It reports wall time and this process's CPU
// (getrusage; Azurite's is not in it) per read. With -cpuprofile on one
// side at a time it shows where a point read's client CPU goes. Run under
// scripts/azurite run with -benchtime 2000x.
func BenchmarkGetWireAzurite(b *testing.B) {
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
	const n = 500
	name := fmt.Sprintf("wireg%d", time.Now().UnixNano())
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
	measure := func(b *testing.B, get func(rk string) error) {
		b.ReportAllocs()
		t0, c0 := time.Now(), processCPU()
		i := 0
		for b.Loop() {
			if err := get(fmt.Sprintf("r%05d", i%n)); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(time.Since(t0).Microseconds())/float64(b.N), "wall-µs/read")
		b.ReportMetric(float64((processCPU()-c0).Microseconds())/float64(b.N), "cpu-µs/read")
	}
	b.Run("table.Get+wire", func(b *testing.B) {
		tb, err := table.New[benchkit.TenFields](service(true).NewClient(name), nil)
		if err != nil {
			b.Fatal(err)
		}
		measure(b, func(rk string) error {
			_, err := tb.Get(ctx, benchkit.Ten.PartitionKey, rk, nil)
			return err
		})
	})
	b.Run("raw-GetEntity+encoding/json", func(b *testing.B) {
		client := plain.NewClient(name)
		measure(b, func(rk string) error {
			resp, err := client.GetEntity(ctx, benchkit.Ten.PartitionKey, rk, nil)
			if err != nil {
				return err
			}
			var v handTen
			return json.Unmarshal(resp.Value, &v)
		})
	})
}
