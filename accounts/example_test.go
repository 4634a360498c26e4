package accounts_test

import (
	"context"
	"fmt"
	"slices"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/accounts"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

type Order struct {
	table.Meta
	Amount int64
}

func ExampleRouter() {
	ctx := context.Background()
	// Two fakes stand for two storage accounts; with real ones, Connect is
	// the TableService of accounts.ParseConnectionString(cs).
	east, west := fake.NewTableService(nil), fake.NewTableService(nil)
	config := func(name string, svc *fake.TableService) accounts.Config {
		return accounts.Config{Name: name, Connect: func(o *aztables.ClientOptions) (*aztables.ServiceClient, error) {
			return svc.NewServiceClient(o), nil // o carries the account's tune.Limiter
		}}
	}
	r, err := accounts.New([]accounts.Config{config("east", east), config("west", west)}, nil)
	if err != nil {
		panic(err)
	}
	if err := r.CreateTable(ctx, "Orders", nil); err != nil {
		panic(err)
	}

	// A bulk write: each operation goes to its partition's account.
	var ops []batch.Op
	for c := range 6 {
		for i := range 10 {
			ops = append(ops, batch.Add(&Order{Meta: table.Meta{PartitionKey: fmt.Sprint("customer", c), RowKey: fmt.Sprint(i)}, Amount: int64(i)}))
		}
	}
	sum, err := r.Write(ctx, "Orders", slices.Values(ops), nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("written:", sum.Operations, "in", sum.Transactions, "transactions;", east.Len("Orders")+west.Len("Orders"), "stored")

	// A typed table over the key's account.
	orders, _ := table.New[Order](r.Table("customer3", "Orders"), nil)
	o, err := orders.Get(ctx, "customer3", "7", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("customer3 order 7:", o.Amount)

	// Growing to three accounts moves only the partitions the new one wins.
	north := fake.NewTableService(nil)
	grown, _ := accounts.New([]accounts.Config{config("east", east), config("west", west), config("north", north)}, nil)
	_ = grown.CreateTable(ctx, "Orders", nil)
	m, _ := accounts.NewMigration(r, grown)
	moved := 0
	for c := range 6 {
		if _, to, ok := m.Moved(fmt.Sprint("customer", c)); ok {
			moved++
			fmt.Println("customer", c, "moves to", to.Name())
		}
	}
	ms, err := m.MoveTable(ctx, "Orders", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("moved partitions:", ms.Partitions, "entities:", ms.Deleted, "now in north:", north.Len("Orders"), moved == ms.Partitions)
	// Output:
	// written: 60 in 6 transactions; 60 stored
	// customer3 order 7: 7
	// customer 0 moves to north
	// customer 1 moves to north
	// moved partitions: 2 entities: 20 now in north: 20 true
}
