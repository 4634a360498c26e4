package table_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/tablekit/tablekit/fake"
	"github.com/tablekit/tablekit/table"
)

// A []byte field tagged gzip is stored compressed: 117 KB of CSV, over the
// 64 KiB binary limit as it is, fits one property.
func Example_gzipProperty() {
	ctx := context.Background()
	client := fake.NewTableService(nil).NewClient("Exports", nil)
	_, _ = client.CreateTable(ctx, nil)
	type Export struct {
		table.Meta
		CSV []byte `table:"CSV,gzip"`
	}
	exports, _ := table.New[Export](client, nil)
	csv := bytes.Repeat([]byte("customer,order,amount\n42,1000017,99.50\n"), 3000)
	err := exports.Upsert(ctx, &Export{Meta: table.Meta{PartitionKey: "2026-11", RowKey: "daily"}, CSV: csv}, nil)
	back, _ := exports.Get(ctx, "2026-11", "daily", nil)
	stored, _ := exports.Entities().Get(ctx, "2026-11", "daily", nil)
	v, _ := stored.Get("CSV")
	b, _ := v.AsBinary()
	fmt.Println(err, len(back.CSV), len(b) < table.MaxBinaryBytes, b[0] == 0x1f && b[1] == 0x8b)
	// Output: <nil> 117000 true true
}

// QueryStats shows what a query cost: here a table scan for one order per
// partition, on a fake that ends pages at partition boundaries and sends
// every second page empty, as the service may. The Table's logger warns
// about it.
func ExampleQueryStats() {
	ctx := context.Background()
	client := fake.NewTableService(&fake.TableServiceOptions{Paging: &fake.Paging{EmptyPageEvery: 2}}).NewClient("Orders", nil)
	_, _ = client.CreateTable(ctx, nil)
	type Order struct {
		table.Meta
		Status string
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey || a.Key == slog.MessageKey {
			return slog.Attr{} // keep the output stable
		}
		return a
	}}))
	orders, _ := table.New[Order](client, &table.Options{Name: "Orders", Logger: logger})
	for p := range 4 {
		for r := range 3 {
			status := map[bool]string{true: "lost", false: "shipped"}[r == 1]
			_ = orders.Upsert(ctx, &Order{Meta: table.Meta{PartitionKey: fmt.Sprint("customer", p), RowKey: fmt.Sprint("order", r)}, Status: status}, nil)
		}
	}
	stats := table.QueryStats{Label: "lost orders"}
	lost := 0
	for _, err := range orders.Query(table.WithQueryStats(ctx, &stats), &table.QueryOptions{Filter: table.Prop("Status").Eq("lost")}) {
		if err != nil {
			panic(err)
		}
		lost++
	}
	fmt.Println(lost, stats.Kind, stats.Requests, stats.EmptyPages, stats.Entities, stats.LowDensity)
	// Output:
	// level=WARN label="lost orders" table=Orders kind="table scan" filter="Status eq 'lost'" requests=7 entities=4 empty_pages=3 done=true
	// 4 table scan 7 3 4 true
}
