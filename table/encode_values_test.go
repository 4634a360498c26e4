package table_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// Values at the edges of what the codec writes: each written as the
// service reads it, and read back as it was.

type edgeValues struct {
	table.Meta
	F32  float32
	When time.Time
	Text string
}

// A float32 is written in the shortest form that reads back as the same
// float32 ("0.1"), not as the float64 it widens to (0.10000000149011612).
func TestEncodeWritesAFloat32AsItself(t *testing.T) {
	v := &edgeValues{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, F32: 0.1, When: time.Unix(0, 0)}
	out, err := tableio.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"F32":0.1,`) {
		t.Fatalf("written: %s; want F32 as 0.1", out)
	}
	var back edgeValues
	if err := tableio.Unmarshal(out, &back); err != nil || back.F32 != 0.1 {
		t.Fatalf("read back: %v %v", back.F32, err)
	}
}

// Edm.DateTime starts at 1601-01-01T00:00:00Z: that instant is written, a
// nanosecond before it is refused before any request.
func TestEncodeDateTimeFromItsFirstInstant(t *testing.T) {
	first := time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)
	v := &edgeValues{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, When: first}
	out, err := tableio.Marshal(v)
	if err != nil || !strings.Contains(string(out), `"When":"1601-01-01T00:00:00`) {
		t.Fatalf("the first instant: %s %v", out, err)
	}
	v.When = first.Add(-time.Nanosecond)
	if _, err := tableio.Marshal(v); !errors.Is(err, table.ErrValueOutOfRange) {
		t.Fatalf("a nanosecond before it: %v; want ErrValueOutOfRange", err)
	}
}

// U+2028 and U+2029 (line and paragraph separators) are written escaped,
// each as itself, and read back unchanged.
func TestEncodeEscapesTheLineAndParagraphSeparators(t *testing.T) {
	text := "a\u2028b\u2029c"
	v := &edgeValues{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, When: time.Unix(0, 0), Text: text}
	out, err := tableio.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"Text":"a\u2028b\u2029c"`) {
		t.Fatalf("written: %s; want both separators escaped as themselves", out)
	}
	var generic map[string]any
	if err := json.Unmarshal(out, &generic); err != nil || generic["Text"] != text {
		t.Fatalf("read back by encoding/json: %q %v", generic["Text"], err)
	}
}

// Audit is embedded: its fields are the entity's own.
type Audit struct {
	By string
	At time.Time
}

type audited struct {
	table.Meta
	Audit
	Name string
}

// Audit2 embeds a field no entity property can hold.
type Audit2 struct{ C chan int }

type badAudited struct {
	table.Meta
	Audit2
	Name string
}

// An embedded struct's fields are written as the entity's own, and the
// fields after it too; an embedded field the codec cannot write makes
// the type refused, as a field of its own would.
func TestEncodeWalksEmbeddedStructs(t *testing.T) {
	v := &audited{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Audit: Audit{By: "ann", At: time.Unix(0, 0)}, Name: "n"}
	out, err := tableio.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); !strings.Contains(s, `"By":"ann"`) || !strings.Contains(s, `"Name":"n"`) {
		t.Fatalf("written: %s; want By (embedded) and Name (after it)", s)
	}
	if _, err := tableio.Marshal(&badAudited{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, Name: "n"}); !errors.Is(err, table.ErrUnsupportedType) {
		t.Fatalf("an embedded chan: %v; want ErrUnsupportedType", err)
	}
}
