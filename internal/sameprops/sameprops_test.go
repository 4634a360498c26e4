package sameprops

import "testing"

func TestSameProperties(t *testing.T) {
	sent := `{"PartitionKey":"Sales","RowKey":"000123","Name":"Don","Age@odata.type":"Edm.Int64","Age":"34",` +
		`"Rating":2.0,"Hired@odata.type":"Edm.DateTime","Hired":"2012-03-04T05:06:07Z","Active":true}`
	cases := []struct {
		name   string
		stored string
		want   bool
	}{
		{"as the service returns it", `{"odata.etag":"W/\"x\"","PartitionKey":"Sales","RowKey":"000123","Timestamp":"2026-11-21T10:00:00.1234567Z",` +
			`"Name":"Don","Age@odata.type":"Edm.Int64","Age":"34","Rating":2,"Hired@odata.type":"Edm.DateTime","Hired":"2012-03-04T05:06:07.0000000Z","Active":true}`, true},
		{"another value", `{"Name":"Don","Age@odata.type":"Edm.Int64","Age":"35","Rating":2,"Hired@odata.type":"Edm.DateTime","Hired":"2012-03-04T05:06:07Z","Active":true}`, false},
		{"another time", `{"Name":"Don","Age@odata.type":"Edm.Int64","Age":"34","Rating":2,"Hired@odata.type":"Edm.DateTime","Hired":"2012-03-04T05:06:08Z","Active":true}`, false},
		{"a property missing", `{"Name":"Don","Age@odata.type":"Edm.Int64","Age":"34","Rating":2,"Hired@odata.type":"Edm.DateTime","Hired":"2012-03-04T05:06:07Z"}`, false},
		{"a property more", `{"Name":"Don","Age@odata.type":"Edm.Int64","Age":"34","Rating":2,"Hired@odata.type":"Edm.DateTime","Hired":"2012-03-04T05:06:07Z","Active":true,"X":1}`, false},
		{"a String that reads as the number", `{"Name":"Don","Age@odata.type":"Edm.Int64","Age":"34","Rating":"2","Hired@odata.type":"Edm.DateTime","Hired":"2012-03-04T05:06:07Z","Active":true}`, false},
		{"an annotated Double", `{"Name":"Don","Age@odata.type":"Edm.Int64","Age":"34","Rating@odata.type":"Edm.Double","Rating":"2.0","Hired@odata.type":"Edm.DateTime","Hired":"2012-03-04T05:06:07Z","Active":true}`, true},
		{"not JSON", `{`, false},
	}
	for _, c := range cases {
		if got := Equal([]byte(sent), []byte(c.stored)); got != c.want {
			t.Errorf("%s: SameProperties = %v, want %v", c.name, got, c.want)
		}
	}
	if Equal([]byte(`{"Name":"2"}`), []byte(`{"Name@odata.type":"Edm.String","Name":"2.0"}`)) {
		t.Error("strings compared as numbers")
	}
}
