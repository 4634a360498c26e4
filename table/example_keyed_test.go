package table_test

import (
	"context"
	"fmt"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// Order declares its keys: PartitionKey is the customer, RowKey the fixed
// prefix "order", the year in four digits, then the order's ID.
type Order struct {
	table.Meta `table:",rkprefix:order_"`
	Customer   string `table:"Customer,pk"`
	Year       int    `table:"Year,rk:1,pad:4"`
	ID         string `table:"ID,rk:2"`
	Amount     float64
	Status     string
}

// OrderSummary is a projection of Order: a query for it reads only these
// properties ($select=PartitionKey,RowKey,Customer,Year,ID,Amount).
type OrderSummary struct {
	table.Meta `table:",rkprefix:order_"`
	Customer   string `table:"Customer,pk"`
	Year       int    `table:"Year,rk:1,pad:4"`
	ID         string `table:"ID,rk:2"`
	Amount     float64
}

// Declarative keys, a range from a prefix of them, a typed filter and a
// typed projection: no key string is written by hand.
func ExampleKeyRange() {
	ctx := context.Background()
	client := fake.NewTableService(nil).NewClient("Orders", nil)
	if _, err := client.CreateTable(ctx, nil); err != nil {
		panic(err)
	}
	orders, err := table.New[Order](client, nil)
	if err != nil {
		panic(err)
	}
	for _, o := range []*Order{
		{Customer: "C042", Year: 2025, ID: "o-1", Amount: 80, Status: "paid"},
		{Customer: "C042", Year: 2026, ID: "o-2", Amount: 120, Status: "paid"},
		{Customer: "C042", Year: 2026, ID: "o-3", Amount: 40, Status: "open"},
		{Customer: "C077", Year: 2026, ID: "o-4", Amount: 500, Status: "paid"},
	} {
		if err := orders.Add(ctx, o, nil); err != nil {
			panic(err)
		}
	}
	first := &Order{Customer: "C042", Year: 2026, ID: "o-2"}
	pk, rk, _ := table.KeysOf(first)
	fmt.Println(pk, rk)
	got, _ := orders.Get(ctx, pk, rk, nil)
	fmt.Println("Get:", got.Customer, got.Year, got.ID, got.Amount)

	// All orders of customer C042 in 2026, above 50.
	in2026 := table.KeyRange(&Order{Customer: "C042", Year: 2026}, 1)
	amount := table.FieldOf(func(o *Order) *float64 { return &o.Amount })
	f := in2026.And(amount.Gt(50))
	fmt.Printf("%v: %v\n", f.Kind(), f)
	for o, err := range table.QueryAs[OrderSummary](ctx, orders, &table.QueryOptions{Filter: f}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(o.Customer, o.Year, o.ID, o.Amount)
	}
	// Output:
	// C042 order_2026!o-2!
	// Get: C042 2026 o-2 120
	// range query: (PartitionKey eq 'C042') and (RowKey ge 'order_2026!') and (RowKey lt 'order_2026"') and (Amount gt 50.0)
	// C042 2026 o-2 120
}

// A typed field reference: the property name comes from the codec (Amount
// is stored as "Total"), and the value must have the field's type.
func ExampleFieldOf() {
	type Invoice struct {
		table.Meta
		Amount float64 `table:"Total"`
		Count  int64
	}
	total := table.FieldOf(func(i *Invoice) *float64 { return &i.Amount })
	count := table.FieldOf(func(i *Invoice) *int64 { return &i.Count })
	f := table.Partition("2026").And(total.Ge(100), count.Lt(3))
	fmt.Println(f)
	// Output:
	// (PartitionKey eq '2026') and (Total ge 100.0) and (Count lt 3L)
}
