package table

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzSplitPage: splitPage never panics, and on every page encoding/json
// accepts it finds the same elements of "value" as json.RawMessage does.
func FuzzSplitPage(f *testing.F) {
	f.Add([]byte(`{"odata.metadata":"x","value":[{"PartitionKey":"p","RowKey":"r","S":"a\"]}"},{"N":1,"A":[1,{"b":"}"}]}]}`))
	f.Add([]byte(`{"value":[]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(` { "value" : [ { } , {"x":null} ] , "odata.nextLink":"z" } `))
	f.Add([]byte(`{"other":{"value":[1]},"value":[{"value":[{"k":2}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := splitPage(b)
		var page struct {
			Value []json.RawMessage `json:"value"`
		}
		if json.Unmarshal(b, &page) != nil || !json.Valid(b) {
			return
		}
		// Compare only pages shaped like the service's: one "value" key,
		// spelt exactly (encoding/json also matches "VALUE", escaped
		// spellings and the last of duplicates; the service sends none).
		var obj map[string]json.RawMessage
		if json.Unmarshal(b, &obj) != nil || obj["value"] == nil || bytes.Count(b, []byte(`"value"`)) != 1 {
			return
		}
		for k := range obj {
			if k != "value" && strings.EqualFold(k, "value") {
				return
			}
		}
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		if len(got) != len(page.Value) {
			t.Fatalf("%q: %d elements, encoding/json %d", b, len(got), len(page.Value))
		}
		for i := range got {
			if !bytes.Equal(got[i], page.Value[i]) {
				t.Fatalf("%q: element %d %q, encoding/json %q", b, i, got[i], page.Value[i])
			}
		}
	})
}
