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
