package table

import (
	"bytes"
	"encoding/base64"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/keyrules"
)

// Entity is an untyped entity: its keys, ETag and Timestamp in Meta, and
// every other property as an EDM-typed Value. It is a T like any struct
// that embeds Meta: Table[Entity] (New[Entity], or Table.Entities for a
// typed table's raw view) has every verb — Get, Add, Upsert, Update,
// Delete, Modify, Query, QueryPage — and batch operations take a *Entity
// as they take a *T. Writes check it exactly as a typed value: keys,
// property names, at most MaxUserProperties properties, string, binary and
// entity sizes, DateTime range, and no zero Value; bad input is an
// *InputError and nothing is sent.
//
// How a Double without its annotation reads: see "Untyped entities and
// Doubles" in the package documentation.
type Entity struct {
	Meta
	// Properties maps each property name to its value; PartitionKey,
	// RowKey and Timestamp are in Meta, not here.
	Properties map[string]Value
}

// Get returns the named property.
func (e *Entity) Get(name string) (Value, bool) {
	v, ok := e.Properties[name]
	return v, ok
}

// Set sets the named property, making the map if needed.
func (e *Entity) Set(name string, v Value) {
	if e.Properties == nil {
		e.Properties = map[string]Value{}
	}
	e.Properties[name] = v
}

// SameProperties reports whether e and o hold the same properties with the
// Same values; keys, ETag and Timestamp are not compared.
func (e *Entity) SameProperties(o *Entity) bool {
	if len(e.Properties) != len(o.Properties) {
		return false
	}
	for name, v := range e.Properties {
		w, ok := o.Properties[name]
		if !ok || !v.Same(w) {
			return false
		}
	}
	return true
}

var entityType = reflect.TypeFor[Entity]()

// entityPlan is the plan of Entity: no fields, meta at index 0, raw.
var entityPlan = &plan{typ: entityType, byName: map[string]int{}, meta: []int{0}, raw: true}

// encodeEntity appends e's JSON to b after checking it as the service
// would; only, when non-nil, restricts the properties written.
func encodeEntity(b []byte, e *Entity, only map[string]bool) ([]byte, error) {
	const op, typ = "encode", "table.Entity"
	if err := validateKeys(op, typ, e.PartitionKey, e.RowKey); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(e.Properties))
	for name := range e.Properties {
		if only == nil || only[name] {
			names = append(names, name)
		}
	}
	if len(names) > MaxUserProperties {
		return nil, inputErr(op, typ, "", ErrTooManyProperties, "%d properties, at most %d besides PartitionKey, RowKey and Timestamp", len(names), MaxUserProperties)
	}
	// Sorted, so that one entity always encodes to the same bytes.
	slices.Sort(names)
	if b == nil {
		b = make([]byte, 0, 64+len(names)*32)
	}
	sz := sizer{n: 4 + 2*keyrules.UTF16Len(e.PartitionKey) + 2*keyrules.UTF16Len(e.RowKey)}
	sz.prop("Timestamp", 8)
	b = append(b, `{"PartitionKey":`...)
	b, _ = appendJSONString(b, e.PartitionKey)
	b = append(b, `,"RowKey":`...)
	b, _ = appendJSONString(b, e.RowKey)
	for _, name := range names {
		if err := keyrules.ValidatePropertyName(name); err != nil {
			return nil, &InputError{Op: op, Type: typ, Field: name, Rule: err}
		}
		var err error
		if b, err = appendValue(b, typ, name, e.Properties[name], &sz); err != nil {
			return nil, err
		}
	}
	if sz.n > MaxEntityBytes {
		return nil, inputErr(op, typ, "", ErrEntityTooLarge, "%d bytes as the service counts them, at most %d", sz.n, MaxEntityBytes)
	}
	return append(b, '}'), nil
}

// appendValue appends `,"name@odata.type":"Edm.X","name":value` (the
// annotation only where the service needs it) after checking the value.
func appendValue(b []byte, typ, name string, v Value, sz *sizer) ([]byte, error) {
	const op = "encode"
	b = append(b, ',')
	switch v.k {
	case kindInt64, kindDouble, kindDateTime, kindGUID, kindBinary:
		b, _ = appendJSONString(b, name+"@odata.type")
		b = append(b, ':', '"')
		b = append(b, v.Type()...)
		b = append(b, '"', ',')
	}
	b, _ = appendJSONString(b, name)
	b = append(b, ':')
	switch v.k {
	case kindString:
		return appendStringProp(b, sz, typ, name, v.s, "string")
	case kindBoolean:
		b = strconv.AppendBool(b, v.n != 0)
		sz.prop(name, 1)
	case kindInt32:
		if v.n < math.MinInt32 || v.n > math.MaxInt32 {
			return nil, inputErr(op, typ, name, ErrValueOutOfRange, "Edm.Int32 holds 32 bits, got %d", v.n)
		}
		b = strconv.AppendInt(b, v.n, 10)
		sz.prop(name, 4)
	case kindInt64:
		b = append(b, '"')
		b = strconv.AppendInt(b, v.n, 10)
		b = append(b, '"')
		sz.prop(name, 8)
	case kindDouble:
		b = appendDouble(b, v.float(), 64)
		sz.prop(name, 8)
	case kindDateTime:
		t := v.time()
		if v.s != "" || t.Unix() < minDateTimeUnix || keyrules.CheckTicksRange(t) != nil {
			return nil, inputErr(op, typ, name, ErrValueOutOfRange, "Edm.DateTime holds 1601-01-01 to 9999-12-31 UTC, got %s", t.Format(time.RFC3339))
		}
		b = append(b, '"')
		b = t.AppendFormat(b, dateTimeLayout)
		b = append(b, '"')
		sz.prop(name, 8)
	case kindBinary:
		if len(v.s) > MaxBinaryBytes {
			return nil, inputErr(op, typ, name, ErrBinaryTooLong, "%d bytes, at most %d", len(v.s), MaxBinaryBytes)
		}
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, []byte(v.s))
		b = append(b, '"')
		sz.prop(name, len(v.s)+4)
	case kindGUID:
		b = append(b, '"')
		b = append(b, v.guid().String()...)
		b = append(b, '"')
		sz.prop(name, 16)
	default:
		return nil, inputErr(op, typ, name, ErrInvalidValue, "the zero Value has no EDM type; build values with ValueOf")
	}
	return b, nil
}

// appendDouble writes a Double as the service reads it: a JSON number, or
// the strings NaN, Infinity, -Infinity (which need the annotation).
func appendDouble(b []byte, x float64, bits int) []byte {
	switch {
	case math.IsNaN(x):
		return append(b, `"NaN"`...)
	case math.IsInf(x, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(x, -1):
		return append(b, `"-Infinity"`...)
	}
	return strconv.AppendFloat(b, x, 'g', -1, bits)
}

// decodeEntity fills e from an entity as the service returns it.
func decodeEntity(data []byte, e *Entity) error {
	*e = Entity{}
	type member struct {
		name string
		v    jsonValue
	}
	// One allocation for the members: every one is a `":` in the text
	// (strings may hold more, which only over-sizes).
	members := make([]member, 0, bytes.Count(data, []byte(`":`)))
	var types map[string]string
	err := scanObject(data, func(key []byte, v jsonValue) error {
		switch string(key) {
		case "PartitionKey":
			e.PartitionKey = unquote(v.raw)
			return nil
		case "RowKey":
			e.RowKey = unquote(v.raw)
			return nil
		case "Timestamp":
			if t, err := time.Parse(time.RFC3339Nano, unquote(v.raw)); err == nil {
				e.Timestamp = t.UTC()
			}
			return nil
		case "odata.etag":
			e.ETag = azcore.ETag(unquote(v.raw))
			return nil
		}
		if name, ok := bytes.CutSuffix(key, annotationSuffix); ok {
			if types == nil {
				types = map[string]string{}
			}
			types[string(name)] = unquote(v.raw)
			return nil
		}
		if bytes.HasPrefix(key, odataPrefix) {
			return nil
		}
		members = append(members, member{string(key), v})
		return nil
	})
	if err != nil {
		if ie, ok := err.(*InputError); ok && ie.Type == "" {
			ie.Type = "table.Entity"
		}
		return err
	}
	e.Properties = make(map[string]Value, len(members))
	for _, m := range members {
		v, ok, err := parseValue(types[m.name], m.v)
		if err != nil {
			return &InputError{Op: "decode", Type: "table.Entity", Field: m.name, Rule: ErrInvalidValue, Detail: err.Error()}
		}
		if ok {
			e.Properties[m.name] = v
		}
	}
	return nil
}

// parseValue reads one property given its annotation ("" for none); ok is
// false for a JSON null, which the service never stores.
func parseValue(edm string, v jsonValue) (Value, bool, error) {
	raw := string(v.raw)
	if !v.str && raw == "null" {
		return Value{}, false, nil
	}
	text := raw
	if v.str {
		text = unquote(v.raw)
	}
	switch edm {
	case "":
		switch {
		case v.str:
			return stringValue(text), true, nil
		case raw == "true" || raw == "false":
			return boolValue(raw == "true"), true, nil
		case strings.ContainsAny(raw, ".eE"):
			x, err := strconv.ParseFloat(raw, 64)
			if err != nil {
				return Value{}, false, errWant("a number", v)
			}
			return doubleValue(x), true, nil
		}
		if n, err := strconv.ParseInt(raw, 10, 32); err == nil {
			return Value{k: kindInt32, n: n, inferred: true}, true, nil
		}
		// Too big for an Int32, which the service never sends unannotated
		// beyond its range: a Double.
		x, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return Value{}, false, errWant("a number", v)
		}
		return doubleValue(x), true, nil
	case EdmString:
		if !v.str {
			return Value{}, false, errWant("a string", v)
		}
		return stringValue(text), true, nil
	case EdmBoolean:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return Value{}, false, errWant("a boolean", v)
		}
		return boolValue(b), true, nil
	case EdmInt32:
		n, err := strconv.ParseInt(text, 10, 32)
		if err != nil {
			return Value{}, false, errWant("an Edm.Int32", v)
		}
		return int32Value(int32(n)), true, nil
	case EdmInt64:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return Value{}, false, errWant("an Edm.Int64", v)
		}
		return int64Value(n), true, nil
	case EdmDouble:
		switch text {
		case "NaN":
			return doubleValue(math.NaN()), true, nil
		case "Infinity", "INF":
			return doubleValue(math.Inf(1)), true, nil
		case "-Infinity", "-INF":
			return doubleValue(math.Inf(-1)), true, nil
		}
		x, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return Value{}, false, errWant("an Edm.Double", v)
		}
		return doubleValue(x), true, nil
	case EdmDateTime:
		t, err := time.Parse(time.RFC3339Nano, text)
		if err != nil {
			return Value{}, false, errWant("an Edm.DateTime", v)
		}
		return dateTimeValue(t), true, nil
	case EdmGUID:
		g, err := ParseGUID(text)
		if err != nil {
			return Value{}, false, err
		}
		return guidValue(g), true, nil
	case EdmBinary:
		b, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			return Value{}, false, errWant("base64", v)
		}
		return Value{k: kindBinary, s: string(b)}, true, nil
	}
	return Value{}, false, &decodeErr{want: "a known EDM type", got: edm}
}

// Entities is a raw view of t: the same client and options, entities as
// *Entity. It reads what t's entities store (ciphertext, for encrypted
// fields) and sends no request to build.
func (t *Table[T]) Entities() *Table[Entity] {
	return &Table[Entity]{client: t.client, plan: entityPlan, name: t.name, log: t.log, tr: t.tr}
}

// ToEntity returns v as an Entity: the properties v is stored with, typed
// as a write stores them, and v's Meta. It checks v like a write does.
func (t *Table[T]) ToEntity(v *T) (*Entity, error) {
	if v == nil {
		return nil, inputErr("ToEntity", t.plan.typ.String(), "", ErrNilValue, "")
	}
	if t.plan.hasEncrypted() {
		return nil, refuseEncrypted("ToEntity", t.plan)
	}
	body, err := t.plan.encode(nil, reflect.ValueOf(v).Elem(), nil)
	if err != nil {
		return nil, err
	}
	e := new(Entity)
	if err := decodeEntity(body, e); err != nil {
		return nil, err
	}
	e.Meta = *t.Meta(v)
	if t.plan.raw {
		// An Entity keeps its values exactly, Inferred flags included.
		src := any(v).(*Entity)
		for name, val := range src.Properties {
			e.Properties[name] = val
		}
	}
	return e, nil
}

// FromEntity decodes e into a new T, as if T had been read where e was:
// properties T does not name go to its Extra field, if it has one. It
// checks e like a write does.
func (t *Table[T]) FromEntity(e *Entity) (*T, error) {
	if e == nil {
		return nil, inputErr("FromEntity", t.plan.typ.String(), "", ErrNilValue, "")
	}
	if t.plan.hasEncrypted() {
		return nil, refuseEncrypted("FromEntity", t.plan)
	}
	return t.fromEntity(e)
}

// fromEntity decodes e's properties as they are (nothing opened) into a
// new T with e's Meta: FromEntity and fromClearEntity after their checks.
func (t *Table[T]) fromEntity(e *Entity) (*T, error) {
	body, err := encodeEntity(nil, e, nil)
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := t.plan.decode(body, reflect.ValueOf(v).Elem()); err != nil {
		return nil, err
	}
	*t.Meta(v) = e.Meta
	return v, nil
}

// propertySize is what one property adds to an entity's size as the
// service counts it ("Understanding the Table service data model"): 8
// bytes, plus 2 per UTF-16 code unit of its name, plus its value (4 + 2 per
// UTF-16 unit for a string, 4 + length for binary, 1 for a boolean, 4 for
// an Int32, 8 for Int64, Double and DateTime, 16 for a Guid). Packers such
// as a wide entity's use it to fill parts up to MaxEntityBytes.
func propertySize(name string, v Value) int {
	n := 0
	switch v.k {
	case kindString:
		n = 4 + 2*keyrules.UTF16Len(v.s)
	case kindBinary:
		n = 4 + len(v.s)
	case kindBoolean:
		n = 1
	case kindInt32:
		n = 4
	case kindGUID:
		n = 16
	default:
		n = 8
	}
	return 8 + 2*keyrules.UTF16Len(name) + n
}

// Size is e's size as the service counts it, which writes check against
// MaxEntityBytes: 4 bytes, 2 per UTF-16 code unit of PartitionKey and
// RowKey, the Timestamp, and propertySize of every property.
func (e *Entity) Size() int {
	n := 4 + 2*keyrules.UTF16Len(e.PartitionKey) + 2*keyrules.UTF16Len(e.RowKey) + 8 + 2*len("Timestamp") + 8
	for name, v := range e.Properties {
		n += propertySize(name, v)
	}
	return n
}
