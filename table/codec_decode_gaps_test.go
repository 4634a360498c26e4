package table_test

import (
	"errors"
	"testing"

	"github.com/tablekit/tablekit/internal/tableio"
	"github.com/tablekit/tablekit/table"
)

// Codec.Unmarshal refuses a type it cannot map before reading a byte, as
// New does, with the typed error (a mutant that dropped the refusal went
// on to decode with no plan).
func TestUnmarshalRefusesATypeWithoutMeta(t *testing.T) {
	var v struct{ Name string }
	err := tableio.Unmarshal([]byte(`{"PartitionKey":"p","RowKey":"r","Name":"x"}`), &v)
	var ie *table.InputError
	if !errors.Is(err, table.ErrNoMeta) || !errors.As(err, &ie) {
		t.Fatalf("Unmarshal into a struct without Meta: %v, want ErrNoMeta", err)
	}
	if v.Name != "" {
		t.Errorf("the refused value was written: %+v", v)
	}
}

// An Edm.Guid property decodes into a GUID field, and one that is not a
// GUID is an error naming the field, not a zero GUID.
func TestUnmarshalGUIDField(t *testing.T) {
	type order struct {
		table.Meta
		ID table.GUID
	}
	want, err := table.ParseGUID("0f8fad5b-d9cb-469f-a165-70867728950e")
	if err != nil {
		t.Fatal(err)
	}
	var v order
	if err := tableio.Unmarshal([]byte(`{"PartitionKey":"p","RowKey":"r","ID@odata.type":"Edm.Guid","ID":"0f8fad5b-d9cb-469f-a165-70867728950e"}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.ID != want {
		t.Errorf("ID = %v, want %v", v.ID, want)
	}
	err = tableio.Unmarshal([]byte(`{"PartitionKey":"p","RowKey":"r","ID@odata.type":"Edm.Guid","ID":"not-a-guid"}`), &v)
	var ie *table.InputError
	if !errors.As(err, &ie) || ie.Field != "ID" {
		t.Errorf("a malformed GUID: %v, want an InputError naming ID", err)
	}
}
