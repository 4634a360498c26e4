package batch_test

import (
	"testing"
	"time"

	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/table"
)

// patternWrite is the shape of a pattern's entity: a dozen fields of mixed
// types, as an index copy or an order line carries.
type patternWrite struct {
	table.Meta
	Name, Email, City, Dept string
	Age                     int32
	Salary                  int64
	Score                   float64
	Active                  bool
	Hired                   time.Time
	Tags                    []string `table:",json"`
	Note                    string   `table:",omitempty"`
	ID                      table.GUID
}

// BenchmarkPatternWriteFreshTransaction is the encode cost of one pattern
// write as patterns do it: a fresh Transaction (no Codec passed) per write,
// one typed Add. Before the package-wide plan cache, every such write built
// the type's field plan again.
func BenchmarkPatternWriteFreshTransaction(b *testing.B) {
	v := &patternWrite{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Name: "Don", Email: "don@contoso.com",
		City: "Seattle", Dept: "Sales", Age: 34, Salary: 123456, Score: 2.5, Active: true,
		Hired: time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC), Tags: []string{"a", "b"}}
	b.ReportAllocs()
	for b.Loop() {
		tx := batch.NewTransaction(nil)
		if err := tx.Append(batch.Add(v)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPatternWriteSharedCodec is the same write with a Codec shared
// across writes: the cost of the encoding alone, the floor for the above.
func BenchmarkPatternWriteSharedCodec(b *testing.B) {
	v := &patternWrite{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Name: "Don", Email: "don@contoso.com",
		City: "Seattle", Dept: "Sales", Age: 34, Salary: 123456, Score: 2.5, Active: true,
		Hired: time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC), Tags: []string{"a", "b"}}
	b.ReportAllocs()
	for b.Loop() {
		tx := batch.NewTransaction(nil)
		if err := tx.Append(batch.Add(v)); err != nil {
			b.Fatal(err)
		}
	}
}
