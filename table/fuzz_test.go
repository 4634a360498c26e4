package table_test

import (
	"bytes"
	"math"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

type fuzzed struct {
	table.Meta
	S   string
	I64 int64
	I32 int32
	F   float64
	B   bool
	Bin []byte
	T   time.Time
	P   *string
}

// FuzzCodecRoundTrip: any value of the supported types that the codec
// accepts comes back equal.
func FuzzCodecRoundTrip(f *testing.F) {
	f.Add("Sales", "000123", "O'Brien <&> \"x\"", int64(math.MinInt64), int32(-7), 2.0, true, []byte{0, 1, 255}, int64(0))
	f.Add("", "", "é😀\u2028", int64(1), int32(math.MaxInt32), math.SmallestNonzeroFloat64, false, []byte{}, int64(253402300799))
	f.Fuzz(func(t *testing.T, pk, rk, s string, i64 int64, i32 int32, fl float64, b bool, bin []byte, secs int64) {
		at := time.Unix(secs%253402300799, 0).UTC()
		v := fuzzed{Meta: table.Meta{PartitionKey: pk, RowKey: rk}, S: s, I64: i64, I32: i32, F: fl, B: b, Bin: bin, T: at, P: &s}
		data, err := tableio.Marshal(&v)
		if err != nil {
			return // refused before sending: fine
		}
		var back fuzzed
		if err := tableio.Unmarshal(data, &back); err != nil {
			t.Fatalf("cannot decode what was encoded: %v\n%s", err, data)
		}
		sameF := back.F == fl || (math.IsNaN(fl) && math.IsNaN(back.F))
		if back.PartitionKey != pk || back.RowKey != rk || back.S != s || back.I64 != i64 || back.I32 != i32 || !sameF ||
			back.B != b || !bytes.Equal(back.Bin, bin) || !back.T.Equal(at) || back.P == nil || *back.P != s {
			t.Fatalf("round trip changed the value:\n in %+v\nout %+v", v, back)
		}
		if !utf8.ValidString(s) {
			t.Fatal("invalid UTF-8 was accepted")
		}
	})
}
