package table_test

import (
	"math"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// FuzzEntityRoundTrip: any Entity that encodes decodes back to the same
// values, types included (an integral Double too: it is annotated).
func FuzzEntityRoundTrip(f *testing.F) {
	f.Add("s", int32(-1), int64(1<<53+1), 2.0, int64(0), []byte{0, 1}, true)
	f.Add("", int32(math.MaxInt32), int64(math.MinInt64), math.Inf(-1), int64(1<<40), []byte{}, false)
	f.Fuzz(func(t *testing.T, s string, i32 int32, i64 int64, d float64, nanos int64, bin []byte, b bool) {
		e := &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}}
		e.Set("S", table.ValueOf(s))
		e.Set("I32", table.ValueOf(int32(i32)))
		e.Set("I64", table.ValueOf(int64(i64)))
		e.Set("D", table.ValueOf(float64(d)))
		e.Set("T", table.ValueOf(time.Unix(0, nanos)))
		e.Set("Bin", table.ValueOf(bin))
		e.Set("B", table.ValueOf(b))
		body, err := tableio.Marshal(e)
		if err != nil {
			if !utf8.ValidString(s) || len(bin) > table.MaxBinaryBytes || len(s) > table.MaxStringUTF16 {
				return
			}
			t.Fatalf("valid entity refused: %v", err)
		}
		var back table.Entity
		if err := tableio.Unmarshal(body, &back); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		for name, want := range e.Properties {
			if got := back.Properties[name]; !got.Equal(want) {
				t.Fatalf("%s: %v, want %v (%s)", name, got, want, body)
			}
		}
	})
}
