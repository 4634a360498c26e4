package table_test

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// The clients tablekit works over, built as an application builds them. It
// is compiled, not run: it needs a real account.
func Example_clients() {
	conn := "DefaultEndpointsProtocol=https;AccountName=ACCOUNT;AccountKey=KEY;EndpointSuffix=core.windows.net"

	// Connection string (an access key or a SAS; Azurite's too):
	parsed, err := accounts.ParseConnectionString(conn)
	if err != nil {
		panic(err)
	}
	svc, err := parsed.TableService(table.ClientOptions(nil))
	if err != nil {
		panic(err)
	}
	client := svc.NewClient("Employees") // *aztables.Client

	// Entra ID (managed identity, az login, environment, …):
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		panic(err)
	}
	client, err = aztables.NewClient("https://ACCOUNT.table.core.windows.net/Employees", cred, table.ClientOptions(nil))
	if err != nil {
		panic(err)
	}
	employees, err := table.New[Employee](client, nil)
	if err != nil {
		panic(err)
	}
	_ = employees
}

// Typed entities in a few lines: add, change under optimistic concurrency,
// and query a key range.
func Example_inYourCode() {
	ctx := context.Background()
	client := fake.NewTableService(nil).NewClient("Employees", nil) // or your *aztables.Client
	if _, err := client.CreateTable(ctx, nil); err != nil {
		panic(err)
	}

	employees, err := table.New[Employee](client, nil)
	if err != nil {
		panic(err)
	}
	err = employees.Add(ctx, &Employee{Meta: table.Meta{PartitionKey: "Sales", RowKey: "000123"}, FirstName: "Don", Age: 34}, nil)
	if err != nil {
		panic(err)
	}
	e, err := employees.Modify(ctx, "Sales", "000123", func(e *Employee) error { e.FirstName = "Donald"; return nil }, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(e.FirstName, e.ETag != "")
	for e, err := range employees.Query(ctx, &table.QueryOptions{Filter: table.RowPrefix("Sales", "000")}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(e.RowKey, e.FirstName, e.Age)
	}
	// Output:
	// Donald true
	// 000123 Donald 34
}
