package table_test

import (
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// handOrder is keyedOrder with its keys built by hand, the way code without
// declared keys writes them (the same properties): the baseline of the
// keyed benchmarks.
type handOrder struct {
	table.Meta
	Customer string
	Year     int
	Placed   time.Time
	ID       string `table:"OrderID"`
	Amount   float64
	Note     string `table:",omitempty"`
}

func benchOrder() *keyedOrder {
	return &keyedOrder{Customer: "C042", Year: 2026, Placed: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), ID: "o-17", Amount: 12.5}
}

// BenchmarkKeyedEncode: composing PartitionKey and RowKey from four fields
// on every encode (a fresh value each time, as a write sends).
func BenchmarkKeyedEncode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tableio.Marshal(benchOrder()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandKeysEncode: the same entity with keys the caller built with
// package keys, then encoded.
func BenchmarkHandKeysEncode(b *testing.B) {
	placed := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		pk, _ := keys.EncodeTuple("C042")
		id, _ := keys.EncodeTuple("o-17")
		v := &handOrder{Meta: table.Meta{PartitionKey: pk, RowKey: "order!2026!" + keys.InvertedTicks(placed) + "!" + id},
			Customer: "C042", Year: 2026, Placed: placed, ID: "o-17", Amount: 12.5}
		if _, err := tableio.Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKeyedDecode: parsing the four fields back from the keys.
func BenchmarkKeyedDecode(b *testing.B) {
	body, _ := tableio.Marshal(benchOrder())
	b.ReportAllocs()
	for b.Loop() {
		var v keyedOrder
		if err := tableio.Unmarshal(body, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandKeysDecode: the same entity decoded without key fields.
func BenchmarkHandKeysDecode(b *testing.B) {
	body, _ := tableio.Marshal(benchOrder())
	b.ReportAllocs()
	for b.Loop() {
		var v handOrder
		if err := tableio.Unmarshal(body, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFieldOf: resolving a typed field reference and building one
// comparison; hold the Field to pay the resolution once.
func BenchmarkFieldOf(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if f := table.FieldOf(func(o *keyedOrder) *float64 { return &o.Amount }).Gt(100); f.Err() != nil {
			b.Fatal(f.Err())
		}
	}
}

// BenchmarkPropCompare: the untyped Prop comparison FieldOf replaces.
func BenchmarkPropCompare(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if f := table.Prop("Amount").Gt(100.0); f.Err() != nil {
			b.Fatal(f.Err())
		}
	}
}
