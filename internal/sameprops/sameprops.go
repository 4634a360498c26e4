// Package sameprops compares an entity body as it was sent with the entity
// as the service returned it. table (AddOptions.Idempotent) and batch
// (WriterOptions.IdempotentAdds) share it to settle an ambiguous 409.
package sameprops

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Equal reports whether stored, an entity as the service returns
// it, holds exactly the properties of sent, an entity body as it was sent
// to the service, with equal values: the test that tells a write whose
// response was lost (the entity is there as sent) from a different entity
// under the same keys. Values are compared as the service keeps them, so
// 2 and 2.0, and a DateTime with or without trailing zeros, are equal;
// PartitionKey, RowKey, Timestamp and OData annotations are not compared
// (the keys already match).
func Equal(sent, stored []byte) bool {
	a, okA := props(sent)
	b, okB := props(stored)
	if !okA || !okB || len(a) != len(b) {
		return false
	}
	for name, av := range a {
		bv, ok := b[name]
		if !ok || !sameValue(av, bv) {
			return false
		}
	}
	return true
}

// property is one value with the EDM type its annotation gave, if any.
type property struct {
	value any
	typ   string
}

func props(body []byte) (map[string]property, bool) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil {
		return nil, false
	}
	out := make(map[string]property, len(m))
	for k, v := range m {
		if strings.HasPrefix(k, "odata.") || strings.Contains(k, "@odata.") || k == "PartitionKey" || k == "RowKey" || k == "Timestamp" {
			continue
		}
		typ, _ := m[k+"@odata.type"].(string)
		out[k] = property{value: v, typ: typ}
	}
	return out, true
}

func sameValue(a, b property) bool {
	as, bs := scalar(a.value), scalar(b.value)
	if as == bs {
		return true
	}
	typ := a.typ
	if typ == "" {
		typ = b.typ
	}
	switch typ {
	case "Edm.DateTime":
		ta, errA := time.Parse(time.RFC3339Nano, as)
		tb, errB := time.Parse(time.RFC3339Nano, bs)
		return errA == nil && errB == nil && ta.Equal(tb)
	case "Edm.Guid":
		return strings.EqualFold(as, bs)
	case "Edm.Binary", "Edm.String", "Edm.Boolean":
		return false
	}
	// Numbers: an Int64 travels as an annotated string, a Double may lose
	// its annotation and its ".0"; an unannotated string is a String.
	if !numeric(a) || !numeric(b) {
		return false
	}
	fa, errA := strconv.ParseFloat(as, 64)
	fb, errB := strconv.ParseFloat(bs, 64)
	return errA == nil && errB == nil && fa == fb
}

func numeric(p property) bool {
	if _, ok := p.value.(json.Number); ok {
		return true
	}
	return p.typ == "Edm.Int64" || p.typ == "Edm.Double" || p.typ == "Edm.Int32"
}

// scalar renders a decoded JSON scalar as text.
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "null"
	}
	b, _ := json.Marshal(v)
	return string(b)
}
