package rowkind

import "testing"

func TestMarked(t *testing.T) {
	for _, c := range []struct {
		json   string
		marked bool
	}{
		{`{"PartitionKey":"p","RowKey":"email_a","TkIndexOf":"p!empid_1!","Email":"a"}`, true},
		{`{"PartitionKey":"p","RowKey":"lname_x!0000","Value":"x","IDs00":"[]","TkKind":"list"}`, true},
		{`{"TkKind" : "control"}`, true},
		{"{\"TkKind\":\n\"checkpoint\"}", true},
		{`{"TkKind@odata.type":"Edm.String","TkKind":"list"}`, true},
		{`{"PartitionKey":"p","RowKey":"empid_1","Name":"Don"}`, false},
		{`{"TkKind":null,"TkIndexOf":null}`, false},
		{`{"Name":"TkKind","Other":"TkIndexOf"}`, false},
		{`{"Note":"\"TkKind\":\"list\""}`, false},
		{`{"TkKindly":"x","TkIndexOff":"y","TkEncryption":"z"}`, false},
		{`{"TkKind@odata.type":"Edm.String"}`, false},
		{`{"Tk`, false},
		{`{"TkKind"`, false},
		{``, false},
	} {
		if got := Marked([]byte(c.json)); got != c.marked {
			t.Errorf("Marked(%s) = %v, want %v", c.json, got, c.marked)
		}
	}
}

func TestIsReserved(t *testing.T) {
	if !IsReserved(IndexOf) || !IsReserved(Property) || IsReserved("TkEncryption") || IsReserved("Kind") {
		t.Fatal("IsReserved names exactly IndexOf and Property")
	}
}

func TestIs(t *testing.T) {
	for _, c := range []struct {
		json string
		is   bool
	}{
		{`{"PartitionKey":"p","RowKey":"0001_x","Who":"a","TkKind":"log"}`, true},
		{`{"TkKind" : "log"}`, true},
		{`{"TkKind":"logs"}`, false},
		{`{"TkKind":"list"}`, false},
		{`{"TkKind":null}`, false},
		{`{"TkIndexOf":"p!empid_1!"}`, false},
		{`{"PartitionKey":"p","RowKey":"0001_x","Who":"a"}`, false},
		{`{"Note":"\"TkKind\":\"log\""}`, false},
		{`{"TkKind@odata.type":"Edm.String","TkKind":"log"}`, true},
	} {
		if got := Is([]byte(c.json), Log); got != c.is {
			t.Errorf("Is(%s, Log) = %v, want %v", c.json, got, c.is)
		}
	}
}
