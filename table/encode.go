package table

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/keyrules"
)

// codec converts any struct that embeds Meta to and from the service's JSON
// entities, for tablekit's own packages (through internal/tableio): batch
// encodes a transaction's values with it. Users encode through a Table. The
// zero value is ready to use; every codec, Table and Registry shares one
// package-wide cache of field plans, built once per Go type.
type codec struct{}

// plans caches one plan per Go type for the whole package. A plan is
// immutable once built, so sharing it is safe; a type is only ever a key,
// never changed, so the cache holds no mutable state of the caller's.
var plans sync.Map // reflect.Type -> *plan

// cachedPlan returns t's plan, building it on first use. Two goroutines may
// both build it; LoadOrStore keeps one. Errors are not cached: they are
// rare, and each caller gets its own *InputError.
func cachedPlan(t reflect.Type) (*plan, error) {
	if p, ok := plans.Load(t); ok {
		return p.(*plan), nil
	}
	p, err := newPlan(t)
	if err != nil {
		return nil, err
	}
	actual, _ := plans.LoadOrStore(t, p)
	return actual.(*plan), nil
}

func (c *codec) planFor(t reflect.Type) (*plan, error) {
	p, err := cachedPlan(t)
	if err != nil {
		return nil, err
	}
	if p.meta == nil {
		return nil, inputErr("plan", t.String(), "", ErrNoMeta, "embed table.Meta to carry PartitionKey and RowKey")
	}
	return p, nil
}

// structValue checks that v is a non-nil pointer to a struct.
func structValue(op string, v any) (reflect.Value, error) {
	if v == nil {
		return reflect.Value{}, inputErr(op, "", "", ErrNilValue, "")
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && rv.IsNil() {
		return reflect.Value{}, inputErr(op, rv.Type().String(), "", ErrNilValue, "")
	}
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, inputErr(op, rv.Type().String(), "", ErrNotStructPointer, "pass a pointer to your struct")
	}
	return rv.Elem(), nil
}

// Marshal encodes v, a pointer to a struct that embeds Meta, as the JSON
// entity the service expects, after checking every limit of the service.
func (c *codec) Marshal(v any) ([]byte, error) {
	rv, err := structValue("encode", v)
	if err != nil {
		return nil, err
	}
	p, err := c.planFor(rv.Type())
	if err != nil {
		return nil, err
	}
	if p.hasEncrypted() {
		return nil, refuseEncrypted("encode", p)
	}
	return p.encode(nil, rv, nil)
}

// sizer adds up an entity's size as the service counts it ("Understanding
// the Table service data model"): 4 + 2·len(PartitionKey) + 2·len(RowKey)
// + Σ over properties of (8 + 2·len(name) + value size), lengths in
// UTF-16 code units.
type sizer struct{ n int }

func (s *sizer) prop(name string, valueBytes int) { s.n += 8 + 2*keyrules.UTF16Len(name) + valueBytes }

// encode appends the JSON of rv to b. only, when non-nil, restricts the
// properties written to those named (for index projections).
func (p *plan) encode(b []byte, rv reflect.Value, only map[string]bool) ([]byte, error) {
	if p.raw {
		return encodeEntity(b, rv.Addr().Interface().(*Entity), only)
	}
	if only == nil {
		// A whole entity is a write of v: its declared keys are composed
		// into Meta first. A projection (only) is an index copy, which
		// carries keys of its own.
		if err := p.composeKeys("encode", rv); err != nil {
			return nil, err
		}
	}
	meta := rv.FieldByIndex(p.meta).Addr().Interface().(*Meta)
	typ := p.typ.String()
	if err := validateKeys("encode", typ, meta.PartitionKey, meta.RowKey); err != nil {
		return nil, err
	}
	if b == nil {
		b = make([]byte, 0, 64+len(p.fields)*32)
	}
	sz := sizer{n: 4 + 2*keyrules.UTF16Len(meta.PartitionKey) + 2*keyrules.UTF16Len(meta.RowKey)}
	sz.prop("Timestamp", 8)
	b = append(b, `{"PartitionKey":`...)
	b, _ = appendJSONString(b, meta.PartitionKey)
	b = append(b, `,"RowKey":`...)
	b, _ = appendJSONString(b, meta.RowKey)
	count := 0
	for i := range p.fields {
		f := &p.fields[i]
		if only != nil && !only[f.name] {
			continue
		}
		fv := fieldByIndex(rv, f.index)
		if f.ptr {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		} else if f.omitEmpty && fv.IsZero() {
			continue
		}
		count++
		var err error
		if b, err = p.appendField(b, f, fv, &sz); err != nil {
			return nil, err
		}
	}
	if p.extra != nil && only == nil {
		extra := rv.FieldByIndex(p.extra).Interface().(Extra)
		for name, prop := range extra {
			if _, named := p.byName[name]; named {
				// Sending both would give the entity the name twice; keeping
				// one would lose the other without a word.
				return nil, &InputError{Op: "encode", Type: typ, Field: name, Rule: ErrDuplicateProperty,
					Detail: "an Extra entry has the name of a struct field; set the field, or delete the entry"}
			}
			if err := keyrules.ValidatePropertyName(name); err != nil {
				return nil, &InputError{Op: "encode", Type: typ, Field: name, Rule: err}
			}
			// Checked like a typed field: a JSON scalar of its EDM type,
			// within the service's sizes; then written as a Value, which
			// keeps its type (an unannotated integral number stays
			// unannotated, a Double keeps its annotation).
			v, ok, err := prop.decode()
			if err != nil {
				return nil, &InputError{Op: "encode", Type: typ, Field: name, Rule: ErrInvalidValue, Detail: "Extra: " + err.Error()}
			}
			if !ok {
				continue // null: the service stores no such property
			}
			count++
			if b, err = appendValue(b, typ, name, v, &sz); err != nil {
				return nil, err
			}
		}
	}
	if count > MaxUserProperties {
		return nil, inputErr("encode", typ, "", ErrTooManyProperties, "%d properties, at most %d besides PartitionKey, RowKey and Timestamp", count, MaxUserProperties)
	}
	if sz.n > MaxEntityBytes {
		return nil, inputErr("encode", typ, "", ErrEntityTooLarge, "%d bytes as the service counts them, at most %d", sz.n, MaxEntityBytes)
	}
	return append(b, '}'), nil
}

// decode reads a kept property as a Value: its JSON must be one scalar of
// its EDM type; ok is false for null.
func (p Property) decode() (Value, bool, error) {
	raw := bytes.TrimSpace(p.Value)
	if len(raw) == 0 || !json.Valid(raw) {
		return Value{}, false, errors.New("not a JSON value")
	}
	jv := jsonValue{raw: raw}
	switch raw[0] {
	case '"':
		jv.str = true
	case '{', '[':
		return Value{}, false, errors.New("nested JSON values are not entity properties")
	}
	return parseValue(p.Type, jv)
}

func fieldByIndex(v reflect.Value, index []int) reflect.Value {
	if len(index) == 1 {
		return v.Field(index[0])
	}
	return v.FieldByIndex(index)
}

func (p *plan) appendField(b []byte, f *field, fv reflect.Value, sz *sizer) ([]byte, error) {
	typ := p.typ.String()
	b = append(b, ',')
	if f.annotated != nil {
		b = append(b, f.annotated...)
	}
	b = append(b, f.quoted...)
	switch f.kind {
	case kString:
		return appendStringProp(b, sz, typ, f.name, fv.String(), "string")
	case kBool:
		b = strconv.AppendBool(b, fv.Bool())
		sz.prop(f.name, 1)
	case kInt32:
		if fv.CanInt() {
			b = strconv.AppendInt(b, fv.Int(), 10)
		} else {
			b = strconv.AppendUint(b, fv.Uint(), 10)
		}
		sz.prop(f.name, 4)
	case kInt64:
		b = append(b, '"')
		if fv.CanInt() {
			b = strconv.AppendInt(b, fv.Int(), 10)
		} else {
			b = strconv.AppendUint(b, fv.Uint(), 10)
		}
		b = append(b, '"')
		sz.prop(f.name, 8)
	case kDouble:
		x := fv.Float()
		switch {
		case math.IsNaN(x):
			b = append(b, `"NaN"`...)
		case math.IsInf(x, 1):
			b = append(b, `"Infinity"`...)
		case math.IsInf(x, -1):
			b = append(b, `"-Infinity"`...)
		default:
			bits := 64
			if fv.Kind() == reflect.Float32 {
				bits = 32
			}
			b = strconv.AppendFloat(b, x, 'g', -1, bits)
		}
		sz.prop(f.name, 8)
	case kTime:
		t := fv.Interface().(time.Time)
		if t.Unix() < minDateTimeUnix || keyrules.CheckTicksRange(t) != nil {
			return nil, inputErr("encode", typ, f.name, ErrValueOutOfRange, "Edm.DateTime holds 1601-01-01 to 9999-12-31 UTC, got %s; use omitempty or a *time.Time for unset times", t.UTC().Format(time.RFC3339))
		}
		b = append(b, '"')
		b = t.UTC().AppendFormat(b, dateTimeLayout)
		b = append(b, '"')
		sz.prop(f.name, 8)
	case kBinary:
		raw := fv.Bytes()
		if f.gzip {
			var err error
			if raw, err = gzipProp(typ, f.name, raw); err != nil {
				return nil, err
			}
		}
		if len(raw) > MaxBinaryBytes {
			return nil, inputErr("encode", typ, f.name, ErrBinaryTooLong, "%d bytes, at most %d", len(raw), MaxBinaryBytes)
		}
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, raw)
		b = append(b, '"')
		sz.prop(f.name, len(raw)+4)
	case kGUID:
		g := fv.Interface().(GUID)
		b = append(b, '"')
		b = append(b, g.String()...)
		b = append(b, '"')
		sz.prop(f.name, 16)
	case kText, kJSON:
		var raw []byte
		var err error
		if f.kind == kText {
			raw, err = fv.Interface().(interface{ MarshalText() ([]byte, error) }).MarshalText()
		} else {
			raw, err = json.Marshal(fv.Interface())
		}
		if err != nil {
			return nil, &InputError{Op: "encode", Type: typ, Field: f.name, Rule: ErrInvalidValue, Detail: err.Error()}
		}
		return appendStringProp(b, sz, typ, f.name, string(raw), "text")
	}
	return b, nil
}

// dateTimeLayout is the service's Edm.DateTime form: UTC, 7 fractional digits.
const dateTimeLayout = "2006-01-02T15:04:05.0000000Z"

const hexDigits = "0123456789abcdef"

// appendStringProp appends s as a String property's JSON value, after the
// service's length limit; what names it in the error ("string", "text").
func appendStringProp(b []byte, sz *sizer, typ, name, s, what string) ([]byte, error) {
	n := keyrules.UTF16Len(s)
	if n > MaxStringUTF16 {
		return nil, inputErr("encode", typ, name, ErrStringTooLong, "%d UTF-16 code units, at most %d", n, MaxStringUTF16)
	}
	b, ok := appendJSONString(b, s)
	if !ok {
		return nil, inputErr("encode", typ, name, ErrInvalidValue, "%s is not valid UTF-8", what)
	}
	sz.prop(name, 4+2*n)
	return b, nil
}

// appendJSONString appends s as a JSON string; ok is false for invalid UTF-8.
func appendJSONString(b []byte, s string) ([]byte, bool) {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return b, false
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&15])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"'), true
}

// MetaOf returns the Meta embedded in v, a pointer to a struct. When v's
// type declares its keys (`table:"Name,pk"`, see KeyRange), they are
// composed into the Meta first; a key Meta already holds that differs is
// ErrKeyMismatch.
func (c *codec) MetaOf(v any) (*Meta, error) {
	rv, err := structValue("MetaOf", v)
	if err != nil {
		return nil, err
	}
	p, err := c.planFor(rv.Type())
	if err != nil {
		return nil, err
	}
	// Callers take the keys from Meta to route a write (batch operations,
	// patterns): declared keys are composed into it first.
	if err := p.composeKeys("MetaOf", rv); err != nil {
		return nil, err
	}
	return rv.FieldByIndex(p.meta).Addr().Interface().(*Meta), nil
}

// writtenETag records a write's new ETag in m, and the Timestamp the
// service encodes in it, whatever table m's ETag came from; it forgets
// that table. writtenVia applies the rule on Meta instead.
func (m *Meta) writtenETag(etag azcore.ETag) {
	m.ETag = etag
	m.from = nil
	if ts, ok := timestampFromETag(etag); ok {
		m.Timestamp = ts
	}
}
