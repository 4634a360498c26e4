package table_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// The properties a struct does not name travel in its Extra field: read
// into it, written back from it, each entry checked like a typed field
// before anything is sent.

type withExtra struct {
	table.Meta
	Name string
	More table.Extra
}

// A read keeps what the struct does not name, with its type annotation,
// so a read-modify-write writes it back unchanged.
func TestExtraKeepsWhatTheStructDoesNotName(t *testing.T) {
	in := `{"PartitionKey":"p","RowKey":"r","Name":"n","Age":42,"Big":"12","Big@odata.type":"Edm.Int64"}`
	var v withExtra
	if err := tableio.Unmarshal([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	if v.Name != "n" || len(v.More) != 2 || string(v.More["Age"].Value) != "42" || v.More["Big"].Type != table.EdmInt64 || string(v.More["Big"].Value) != `"12"` {
		t.Fatalf("Extra read: %+v", v.More)
	}
	out, err := tableio.Marshal(&v)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got["Age"] != float64(42) || got["Big"] != "12" || got["Big@odata.type"] != table.EdmInt64 || got["Name"] != "n" {
		t.Fatalf("written back: %s", out)
	}
}

// A null entry is not written (the service stores no such property); the
// others are.
func TestExtraNullIsNotWritten(t *testing.T) {
	v := &withExtra{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, More: table.Extra{
		"Gone": {Value: []byte("null")},
		"Kept": {Value: []byte(`"x"`)},
	}}
	out, err := tableio.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); strings.Contains(s, "Gone") || !strings.Contains(s, `"Kept":"x"`) {
		t.Fatalf("written: %s; want Kept and no Gone", s)
	}
}

// Each entry is checked before anything is sent: its name as the service
// names properties, its value one JSON scalar of its type within the
// service's sizes.
func TestExtraEntriesAreCheckedLikeFields(t *testing.T) {
	for _, tc := range []struct {
		name  string
		entry table.Property
		rule  error
		says  string
	}{
		{"bad name", table.Property{Value: []byte(`"x"`)}, nil, ""},
		{"Empty", table.Property{Value: []byte("  ")}, table.ErrInvalidValue, "not a JSON value"},
		{"Broken", table.Property{Value: []byte("tru")}, table.ErrInvalidValue, "not a JSON value"},
		{"Unended", table.Property{Value: []byte(`"abc`)}, table.ErrInvalidValue, "not a JSON value"},
		{"Nested", table.Property{Value: []byte(`{"a":1}`)}, table.ErrInvalidValue, "nested"},
		{"Long", table.Property{Value: []byte(`"` + strings.Repeat("x", table.MaxStringUTF16+1) + `"`)}, table.ErrStringTooLong, ""},
	} {
		v := &withExtra{Meta: table.Meta{PartitionKey: "p", RowKey: "r"}, More: table.Extra{tc.name: tc.entry}}
		_, err := tableio.Marshal(v)
		var ie *table.InputError
		switch {
		case tc.rule == nil: // the name itself: a space is no property name
			if !errors.As(err, &ie) || ie.Field != "bad name" {
				t.Errorf("%s: %v; want an InputError on that field", tc.name, err)
			}
		case !errors.Is(err, tc.rule) || !errors.As(err, &ie) || ie.Field != tc.name || !strings.Contains(err.Error(), tc.says):
			t.Errorf("%s: %v; want %v on that field saying %q", tc.name, err, tc.rule, tc.says)
		}
	}
}

// The codec composes a keyed type's keys as a table does: a key set by
// hand that differs from the one its fields compose is refused, not
// written under the wrong key.
func TestCodecRefusesAKeySetByHand(t *testing.T) {
	v := &keyedOrder{Customer: "C", Year: 2026, ID: "1"}
	v.PartitionKey = "other"
	if out, err := tableio.Marshal(v); !errors.Is(err, table.ErrKeyMismatch) {
		t.Fatalf("Marshal of a key set by hand: %s %v; want ErrKeyMismatch", out, err)
	}
}
