package ledger_test

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/ledger"
)

func Example() {
	l := ledger.New()
	opts := &aztables.ClientOptions{}
	l.Attach(&opts.ClientOptions, ledger.Table)
	client := fake.NewTableService(nil).NewClient("Employees", opts) // or your *aztables.Client's options

	ctx := context.Background()
	_, _ = client.CreateTable(ctx, nil)
	_, _ = client.AddEntity(ctx, []byte(`{"PartitionKey":"Sales","RowKey":"000123"}`), nil)
	_, _ = client.GetEntity(ctx, "Sales", "000123", nil)
	fmt.Println(l.Total(), l.Count(ledger.Key{Service: ledger.Table, Operation: "GetEntity", Resource: "Employees", Partition: "Sales"}))
	// Output: 3 1
}

// Export the ledger as metrics: take a Snapshot when your metrics system
// collects (an OpenTelemetry observable counter's callback, a Prometheus
// collector) and report each Count as a cumulative counter labelled by
// service, operation and resource. Here the "export" prints them.
func ExampleLedger_Snapshot() {
	l := ledger.New()
	opts := &aztables.ClientOptions{}
	l.Attach(&opts.ClientOptions, ledger.Table)
	client := fake.NewTableService(nil).NewClient("Employees", opts)

	ctx := context.Background()
	_, _ = client.CreateTable(ctx, nil)
	for _, rk := range []string{"000123", "000124"} {
		_, _ = client.AddEntity(ctx, []byte(`{"PartitionKey":"Sales","RowKey":"`+rk+`"}`), nil)
		_, _ = client.GetEntity(ctx, "Sales", rk, nil)
	}

	snap := l.Snapshot()
	for _, c := range snap.Counts {
		// e.g. meter observer: o.ObserveInt64(requests, int64(c.Requests),
		// metric.WithAttributes(attribute.String("operation", c.Operation), …))
		fmt.Printf("tablekit_requests_total{service=%q,operation=%q,resource=%q} %d (retries %d)\n",
			c.Service, c.Operation, c.Resource, c.Requests, c.Retries)
	}
	fmt.Println("total", snap.Requests, "retries", snap.Retries)
	// Output:
	// tablekit_requests_total{service="table",operation="CreateTable",resource=""} 1 (retries 0)
	// tablekit_requests_total{service="table",operation="GetEntity",resource="Employees"} 2 (retries 0)
	// tablekit_requests_total{service="table",operation="InsertEntity",resource="Employees"} 2 (retries 0)
	// total 5 retries 0
}
