package table_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// The service's Timestamp (seven fractional digits, UTC) reaches a typed
// value's Meta to the 100 ns, in UTC.
func TestDecodeSetsMetaTimestampFromTheService(t *testing.T) {
	var v employee
	body := `{"odata.etag":"W/\"1\"","PartitionKey":"p","RowKey":"r","Timestamp":"2026-01-02T03:04:05.1234567Z","FirstName":"Ann"}`
	if err := tableio.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 1, 2, 3, 4, 5, 123456700, time.UTC)
	if !v.Timestamp.Equal(want) || v.Timestamp.Location() != time.UTC {
		t.Fatalf("Timestamp %v, want %v", v.Timestamp, want)
	}
	if v.ETag != `W/"1"` || v.PartitionKey != "p" || v.RowKey != "r" || v.FirstName != "Ann" {
		t.Fatalf("decoded %+v", v)
	}
}

// A payload that is no entity is refused naming the Go type it was read
// into, whichever stage found the fault.
func TestDecodeErrorsNameTheType(t *testing.T) {
	for _, body := range []string{`[1]`, `{"PartitionKey":"p","Nested":{"a":1}}`, `{"PartitionKey":`} {
		var v employee
		err := tableio.Unmarshal([]byte(body), &v)
		var ie *table.InputError
		if !errors.As(err, &ie) || !errors.Is(err, table.ErrInvalidValue) || ie.Type != "table_test.employee" {
			t.Errorf("%s: %v, want ErrInvalidValue naming table_test.employee", body, err)
		}
	}
}

// A Double property that is no number is a decode error naming the
// field, not a zero.
func TestDecodeRefusesADoubleThatIsNoNumber(t *testing.T) {
	var v employee
	err := tableio.Unmarshal([]byte(`{"PartitionKey":"p","RowKey":"r","Rating@odata.type":"Edm.Double","Rating":"many"}`), &v)
	var ie *table.InputError
	if !errors.As(err, &ie) || ie.Field != "Rating" || !strings.Contains(err.Error(), `want a number, got "many"`) {
		t.Fatalf("Rating \"many\": %v", err)
	}
	for text, want := range map[string]float64{`"2.5"`: 2.5, `-1e3`: -1000, `"Infinity"`: math.Inf(1)} {
		if err := tableio.Unmarshal([]byte(`{"Rating":`+text+`}`), &v); err != nil || v.Rating != want {
			t.Errorf("Rating %s: %v, %v; want %v", text, v.Rating, err, want)
		}
	}
}

// A decode error quotes the value it could not read up to 40 bytes of its
// JSON, and marks a longer one cut.
func TestDecodeErrorQuotesTheValueUpTo40Bytes(t *testing.T) {
	for _, tc := range []struct{ raw, shown string }{
		{`"` + strings.Repeat("x", 38) + `"`, `"` + strings.Repeat("x", 38) + `"`},
		{`"` + strings.Repeat("x", 39) + `"`, `"` + strings.Repeat("x", 39) + "…"},
	} {
		var v employee
		err := tableio.Unmarshal([]byte(`{"Age":`+tc.raw+`}`), &v)
		if err == nil || !strings.HasSuffix(err.Error(), "want an integer, got "+tc.shown+")") {
			t.Errorf("%d bytes: %v, want it to end in %q", len(tc.raw), err, tc.shown)
		}
	}
}

// An index copy stores its primary's key components as properties under
// keys of its own: decoding it takes the components from the properties
// and never parses the copy's keys, which are not this type's composite.
func TestDecodeTakesKeyComponentsFromPropertiesUnderForeignKeys(t *testing.T) {
	body := `{"PartitionKey":"email_ann@example.com","RowKey":"","Customer":"C042","Year@odata.type":"Edm.Int64","Year":"2026",` +
		`"Placed@odata.type":"Edm.DateTime","Placed":"2026-03-04T05:06:07Z","OrderID":"o-17","Amount":12.5}`
	var v keyedOrder
	if err := tableio.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("a copy with every component as a property: %v", err)
	}
	if v.Customer != "C042" || v.Year != 2026 || v.ID != "o-17" || v.Amount != 12.5 ||
		!v.Placed.Equal(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)) {
		t.Fatalf("decoded %+v", v)
	}
	if v.PartitionKey != "email_ann@example.com" {
		t.Fatalf("Meta's keys are the copy's: %q", v.PartitionKey)
	}
}
