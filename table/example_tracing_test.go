package table_test

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// Give the same tracing provider to the client and to the Table: each
// Table operation is then one span with the SDK's HTTP spans below it.
// With OpenTelemetry the provider is azotel.NewTracingProvider(tp, nil);
// this one prints each span it opens, indented under its parent.
func ExampleOptions_tracing() {
	ctx := context.Background()
	svc := fake.NewTableService(nil)
	if _, err := svc.NewClient("Employees", nil).CreateTable(ctx, nil); err != nil {
		panic(err)
	}

	provider := printingProvider()
	clientOpts := &aztables.ClientOptions{}
	clientOpts.TracingProvider = provider
	employees, err := table.New[Employee](svc.NewClient("Employees", clientOpts), &table.Options{TracingProvider: provider})
	if err != nil {
		panic(err)
	}
	e := &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, FirstName: "Don"}
	if err := employees.Add(ctx, e, nil); err != nil {
		panic(err)
	}
	if _, err := employees.Modify(ctx, "Sales", "000123", func(e *Employee) error { e.Age = 35; return nil }, nil); err != nil {
		panic(err)
	}
	// Output:
	// Table.Add
	//   HTTP POST
	// Table.Modify
	//   HTTP GET
	//   HTTP PUT
}

type depthKey struct{}

// printingProvider is an azcore tracing provider that prints each span's
// name, indented by its depth.
func printingProvider() tracing.Provider {
	return tracing.NewProvider(func(name, version string) tracing.Tracer {
		return tracing.NewTracer(func(ctx context.Context, span string, _ *tracing.SpanOptions) (context.Context, tracing.Span) {
			depth, _ := ctx.Value(depthKey{}).(int)
			fmt.Printf("%*s%s\n", 2*depth, "", span)
			return context.WithValue(ctx, depthKey{}, depth+1), tracing.Span{}
		}, nil)
	}, nil)
}
