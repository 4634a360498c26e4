package table_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// TestEntityDecodesEveryPayloadShape: the annotation wins; without one the
// literal decides, so the service's "2.0" stays a Double and Int64 stays
// Int64.
func TestEntityDecodesEveryPayloadShape(t *testing.T) {
	deadline(t, loopDeadline)
	payload := `{"odata.etag":"W/\"1\"","PartitionKey":"p","RowKey":"r","Timestamp":"2026-01-02T03:04:05.1234567Z",
		"DFrac":2.0,"DExp":1e300,"DInt":2,"DBig":3000000000,"DAnn@odata.type":"Edm.Double","DAnn":2,
		"DNaN@odata.type":"Edm.Double","DNaN":"NaN","DInf@odata.type":"Edm.Double","DInf":"-Infinity",
		"I64@odata.type":"Edm.Int64","I64":"9007199254740993","I32@odata.type":"Edm.Int32","I32":-7,
		"S":"x","B":false,"Null":null,
		"T@odata.type":"Edm.DateTime","T":"2026-01-02T03:04:05.1234567Z",
		"G@odata.type":"Edm.Guid","G":"0F8FAD5B-D9CB-469F-A165-70867728950E",
		"Bin@odata.type":"Edm.Binary","Bin":"AAH/"}`
	var e table.Entity
	if err := tableio.Unmarshal([]byte(payload), &e); err != nil {
		t.Fatal(err)
	}
	if e.PartitionKey != "p" || e.RowKey != "r" || e.ETag != `W/"1"` || e.Timestamp.Nanosecond() != 123456700 {
		t.Fatalf("Meta %+v", e.Meta)
	}
	want := map[string]table.Value{
		"DFrac": table.ValueOf(float64(2)), "DExp": table.ValueOf(float64(1e300)), "DBig": table.ValueOf(float64(3e9)),
		"DAnn": table.ValueOf(float64(2)), "DNaN": table.ValueOf(float64(math.NaN())), "DInf": table.ValueOf(float64(math.Inf(-1))),
		"I64": table.ValueOf(int64(1<<53 + 1)), "I32": table.ValueOf(int32(-7)), "S": table.ValueOf("x"), "B": table.ValueOf(false),
		"T":   table.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 123456700, time.UTC)),
		"Bin": table.ValueOf([]byte{0, 1, 0xff}),
	}
	g, _ := table.ParseGUID("0f8fad5b-d9cb-469f-a165-70867728950e")
	want["G"] = table.ValueOf(g)
	for name, w := range want {
		if got := e.Properties[name]; !got.Equal(w) {
			t.Errorf("%s = %v, want %v", name, got, w)
		}
	}
	if _, ok := e.Properties["Null"]; ok {
		t.Errorf("null decoded as a property")
	}
	d := e.Properties["DInt"]
	if d.Type() != table.EdmInt32 || !d.Inferred() {
		t.Errorf("unannotated 2 = %v (inferred %v), want an inferred Int32", d, d.Inferred())
	}
	if x, ok := d.AsDouble(); !ok || x != 2 {
		t.Errorf("AsDouble of an inferred Int32: %v %v", x, ok)
	}
	// Encoding is deterministic and annotates what needs it.
	a, err := tableio.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := tableio.Marshal(&e)
	if string(a) != string(b) {
		t.Fatalf("two encodings differ:\n%s\n%s", a, b)
	}
	var back table.Entity
	if err := tableio.Unmarshal(a, &back); err != nil {
		t.Fatal(err)
	}
	for name, w := range e.Properties {
		if !back.Properties[name].Equal(w) {
			t.Errorf("re-encoded %s = %v, want %v", name, back.Properties[name], w)
		}
	}
}

func TestEntityDecodeRefusesWhatTheServiceNeverSends(t *testing.T) {
	for _, payload := range []string{
		`{"PartitionKey":"p","RowKey":"r","X@odata.type":"Edm.Decimal","X":"1"}`,
		`{"PartitionKey":"p","RowKey":"r","X@odata.type":"Edm.Int64","X":"1.5"}`,
		`{"PartitionKey":"p","RowKey":"r","X@odata.type":"Edm.Int32","X":3000000000}`,
		`{"PartitionKey":"p","RowKey":"r","X@odata.type":"Edm.Guid","X":"nope"}`,
		`{"PartitionKey":"p","RowKey":"r","X@odata.type":"Edm.Binary","X":"***"}`,
		`{"PartitionKey":"p","RowKey":"r","X":{"nested":1}}`,
	} {
		var e table.Entity
		err := tableio.Unmarshal([]byte(payload), &e)
		var ie *table.InputError
		if !errors.As(err, &ie) || !errors.Is(err, table.ErrInvalidValue) {
			t.Errorf("%s: %v, want an *InputError with ErrInvalidValue", payload, err)
		}
	}
}

func TestValueOfAndAccessors(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	for _, tc := range []struct {
		in  table.Value
		typ string
	}{
		{table.ValueOf("s"), table.EdmString}, {table.ValueOf(true), table.EdmBoolean}, {table.ValueOf(int8(1)), table.EdmInt32},
		{table.ValueOf(int16(1)), table.EdmInt32}, {table.ValueOf(int32(1)), table.EdmInt32}, {table.ValueOf(uint8(1)), table.EdmInt32},
		{table.ValueOf(uint16(1)), table.EdmInt32}, {table.ValueOf(int64(1)), table.EdmInt64}, {table.ValueOf(1), table.EdmInt64},
		{table.ValueOf(uint32(1)), table.EdmInt64}, {table.ValueOf(1.5), table.EdmDouble}, {table.ValueOf(float32(1.5)), table.EdmDouble},
		{table.ValueOf(now), table.EdmDateTime}, {table.ValueOf([]byte("b")), table.EdmBinary}, {table.ValueOf(table.GUID{1}), table.EdmGUID},
	} {
		if tc.in.Type() != tc.typ {
			t.Errorf("ValueOf(%v) is %s; want %s", tc.in.Interface(), tc.in.Type(), tc.typ)
		}
	}
	if tm, _ := table.ValueOf(now).AsTime(); tm.Location() != time.UTC || !tm.Equal(now) {
		t.Errorf("DateTime not kept in UTC: %v", tm)
	}
	b := []byte("abc")
	v := table.ValueOf(b)
	b[0] = 'X'
	if got, _ := v.AsBinary(); string(got) != "abc" {
		t.Errorf("ValueOf([]byte) shares its bytes: %q", got)
	}
	if _, ok := table.ValueOf("1").AsInt64(); ok {
		t.Errorf("a String reads as an Int64")
	}
	if !(table.Value{}).IsZero() || table.ValueOf(int32(0)).IsZero() {
		t.Errorf("IsZero")
	}
}

// TestEntitySizeMatchesTheCheck: Size is the number the write check uses,
// so an entity of exactly MaxEntityBytes is accepted and one byte more is
// refused.
func TestEntitySizeMatchesTheCheck(t *testing.T) {
	e := &table.Entity{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}}
	e.Set("B", table.ValueOf([]byte(nil)))
	base := e.Size()
	for i := 0; base+table.MaxBinaryBytes*(i+1) < table.MaxEntityBytes-64; i++ {
		e.Set("X"+string(rune('a'+i)), table.ValueOf(make([]byte, table.MaxBinaryBytes)))
	}
	fill := table.MaxEntityBytes - e.Size()
	e.Set("B", table.ValueOf(make([]byte, fill)))
	if e.Size() != table.MaxEntityBytes {
		t.Fatalf("size %d", e.Size())
	}
	if _, err := tableio.Marshal(e); err != nil {
		t.Fatalf("exactly MaxEntityBytes: %v", err)
	}
	e.Set("B", table.ValueOf(make([]byte, fill+1)))
	if _, err := tableio.Marshal(e); !errors.Is(err, table.ErrEntityTooLarge) {
		t.Fatalf("one byte over: %v", err)
	}
}

func TestSameTreatsAnInferredInt32AsItsDouble(t *testing.T) {
	var got table.Entity
	if err := tableio.Unmarshal([]byte(`{"PartitionKey":"p","RowKey":"r","D":2,"S":"x"}`), &got); err != nil {
		t.Fatal(err)
	}
	want := &table.Entity{Properties: map[string]table.Value{"D": table.ValueOf(float64(2)), "S": table.ValueOf("x")}}
	if !got.SameProperties(want) || !want.SameProperties(&got) {
		t.Fatalf("an inferred 2 is not the same as Double 2: %v", got.Properties)
	}
	if got.Properties["D"].Equal(table.ValueOf(float64(2))) {
		t.Fatal("Equal must stay strict")
	}
	want.Set("D", table.ValueOf(float64(2.5)))
	if got.SameProperties(want) {
		t.Fatal("2 is the same as 2.5")
	}
	if table.ValueOf(int32(2)).Same(table.ValueOf(float64(2))) {
		t.Fatal("a declared Int32 is the same as a Double")
	}
}
