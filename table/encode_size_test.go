package table_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// sizedRow has one property of every EDM type the typed codec writes, and
// sixteen binary properties to bring the entity up to the service's limit.
type sizedRow struct {
	table.Meta
	Flag  bool
	Small int32
	Large int64
	Ratio float64
	When  time.Time
	ID    table.GUID
	Name  string

	B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, BA, BB, BC, BD, BE, BF []byte
}

// TestTypedEntitySizeCountsEachTypeLikeTheService: the typed codec adds up
// an entity's size with the service's formula ("Understanding the Table
// service data model": 4 + 2·len(PartitionKey) + 2·len(RowKey) + per
// property 8 + 2·len(name) + the value's size: Boolean 1, Int32 4, Int64,
// Double and DateTime 8, Guid 16, Binary its length + 4, String 4 + 2 per
// UTF-16 unit; Timestamp counted as a DateTime). An entity of exactly
// MaxEntityBytes is sent and one byte more is refused before any request,
// so the value size of each type is counted exactly: neither more (a
// valid entity refused) nor less (the service refuses what we sent).
func TestTypedEntitySizeCountsEachTypeLikeTheService(t *testing.T) {
	prop := func(name string, value int) int { return 8 + 2*len(name) + value }
	fixed := 4 + 2*len("pk") + 2*len("rk") +
		prop("Timestamp", 8) +
		prop("Flag", 1) + prop("Small", 4) + prop("Large", 8) + prop("Ratio", 8) +
		prop("When", 8) + prop("ID", 16) + prop("Name", 4+2*5) // "héllo": 5 UTF-16 units
	binaries := []string{"B0", "B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8", "B9", "BA", "BB", "BC", "BD", "BE", "BF"}
	for _, name := range binaries {
		fixed += prop(name, 4)
	}
	spare := table.MaxEntityBytes - fixed // bytes left for the binary values
	if spare <= 15*table.MaxBinaryBytes || spare > 16*table.MaxBinaryBytes {
		t.Fatalf("the test's arithmetic: %d bytes to spread over 16 binaries", spare)
	}
	row := func(lastLen int) *sizedRow {
		full := make([]byte, table.MaxBinaryBytes)
		r := &sizedRow{
			Meta: table.Meta{PartitionKey: "pk", RowKey: "rk"},
			Flag: true, Small: 7, Large: 1 << 40, Ratio: 0.5,
			When: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC),
			ID:   table.GUID{1, 2, 3}, Name: "héllo", // é is one UTF-16 unit
		}
		for _, b := range []*[]byte{&r.B0, &r.B1, &r.B2, &r.B3, &r.B4, &r.B5, &r.B6, &r.B7, &r.B8, &r.B9, &r.BA, &r.BB, &r.BC, &r.BD, &r.BE} {
			*b = full
		}
		r.BF = make([]byte, lastLen)
		return r
	}
	last := spare - 15*table.MaxBinaryBytes
	if _, err := tableio.Marshal(row(last)); err != nil {
		t.Fatalf("an entity of exactly MaxEntityBytes (%d) is refused: %v", table.MaxEntityBytes, err)
	}
	_, err := tableio.Marshal(row(last + 1))
	if !errors.Is(err, table.ErrEntityTooLarge) {
		t.Fatalf("an entity of MaxEntityBytes + 1: err = %v, want ErrEntityTooLarge", err)
	}
	var ie *table.InputError
	if !errors.As(err, &ie) || ie.Op != "encode" {
		t.Fatalf("the refusal is not an encode InputError: %#v", err)
	}
}

// propCount has one named property and as many more as its Extra holds.
type propCount struct {
	table.Meta
	Named string
	More  table.Extra
}

// The service holds at most 252 properties besides PartitionKey, RowKey
// and Timestamp: the codec writes an entity of exactly 252, struct fields
// and Extra entries counted together, and refuses 253 before any request,
// saying how many it counted.
func TestEncodeCountsPropertiesUpToTheServicesLimit(t *testing.T) {
	for _, n := range []int{table.MaxUserProperties, table.MaxUserProperties + 1} {
		v := &propCount{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Named: "x", More: table.Extra{}}
		for i := range n - 1 {
			v.More[fmt.Sprintf("P%03d", i)] = table.Property{Value: []byte(`"v"`)}
		}
		_, err := tableio.Marshal(v)
		switch {
		case n == table.MaxUserProperties && err != nil:
			t.Errorf("%d properties refused: %v", n, err)
		case n > table.MaxUserProperties && (!errors.Is(err, table.ErrTooManyProperties) || !strings.Contains(err.Error(), fmt.Sprintf("%d properties, at most 252", n))):
			t.Errorf("%d properties: %v; want ErrTooManyProperties naming the count", n, err)
		}
	}
}
