package tune_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/testenv"
)

// BenchmarkPool reads one entity from Azurite at concurrency 8, 32 and 64
// with a pool of azcore's default size (10 idle connections per host) and
// with one sized to the concurrency, counting dials. Run with -benchtime 1x.
func BenchmarkPool(b *testing.B) {
	cs := testenv.ConnectionString(b)
	admin, _ := aztables.NewServiceClientFromConnectionString(cs, nil)
	name := testenv.UniqueName("benchpool")
	if _, err := admin.CreateTable(context.Background(), name, nil); err != nil {
		b.Fatal(err)
	}
	defer admin.DeleteTable(context.Background(), name, nil)
	if _, err := admin.NewClient(name).AddEntity(context.Background(), []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil); err != nil {
		b.Fatal(err)
	}
	const reads = 6000
	for _, conc := range []int{8, 32, 64} {
		for _, tuned := range []bool{false, true} {
			label := "default"
			if tuned {
				label = "tuned"
			}
			b.Run(fmt.Sprintf("concurrency=%d/%s", conc, label), func(b *testing.B) {
				// Both pools dial through a counter; "default" has azcore's
				// default size, 10 idle connections per host.
				var dials atomic.Int64
				size := 10
				if tuned {
					size = conc
				}
				tr := http.DefaultTransport.(*http.Transport).Clone()
				tr.MaxIdleConnsPerHost = size
				hc := &http.Client{Transport: tr}
				dial := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
				tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
					dials.Add(1)
					return dial(ctx, network, addr)
				}
				opts := &aztables.ClientOptions{}
				opts.Transport = hc
				svc, _ := aztables.NewServiceClientFromConnectionString(cs, opts)
				client := svc.NewClient(name)
				var elapsed time.Duration
				for b.Loop() {
					start := time.Now()
					var wg sync.WaitGroup
					for g := 0; g < conc; g++ {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for i := 0; i < reads/conc; i++ {
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
				b.ReportMetric(float64(dials.Load())/float64(b.N), "dials")
			})
		}
	}
}
