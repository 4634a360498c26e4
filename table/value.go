package table

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Value is one EDM-typed property value of an Entity. Build it with
// StringValue, BoolValue, Int32Value, Int64Value, DoubleValue,
// DateTimeValue, BinaryValue, GUIDValue or ValueOf; the zero Value has no
// type and is refused on write (ErrInvalidValue). A Value is immutable
// (BinaryValue and AsBinary copy their bytes), so Entities can share them.
type Value struct {
	typ string // one of the Edm* constants, "" for the zero Value
	s   string
	n   int64 // Int32, Int64, Boolean (0 or 1)
	f   float64
	t   time.Time
	b   []byte
	g   GUID
	// inferred: an integral number the payload sent with no type
	// annotation, read as Int32 (see Entity on Doubles).
	inferred bool
}

// StringValue is an Edm.String.
func StringValue(s string) Value { return Value{typ: EdmString, s: s} }

// BoolValue is an Edm.Boolean.
func BoolValue(b bool) Value {
	v := Value{typ: EdmBoolean}
	if b {
		v.n = 1
	}
	return v
}

// Int32Value is an Edm.Int32.
func Int32Value(n int32) Value { return Value{typ: EdmInt32, n: int64(n)} }

// Int64Value is an Edm.Int64. It is written with its annotation, as a
// string, so values beyond 2^53 survive JSON.
func Int64Value(n int64) Value { return Value{typ: EdmInt64, n: n} }

// DoubleValue is an Edm.Double. It is written with its annotation, so an
// integral value such as 2.0 stays a Double; NaN and ±Inf are allowed.
func DoubleValue(x float64) Value { return Value{typ: EdmDouble, f: x} }

// DateTimeValue is an Edm.DateTime, kept in UTC. The service stores
// 1601-01-01 to 9999-12-31 at 100 ns; a time outside is refused on write.
func DateTimeValue(t time.Time) Value { return Value{typ: EdmDateTime, t: t.UTC()} }

// BinaryValue is an Edm.Binary (at most MaxBinaryBytes); b is copied.
func BinaryValue(b []byte) Value {
	return Value{typ: EdmBinary, b: append(make([]byte, 0, len(b)), b...)}
}

// GUIDValue is an Edm.Guid.
func GUIDValue(g GUID) Value { return Value{typ: EdmGUID, g: g} }

// ValueOf converts a Go value: string, bool, int32 (and int8, int16,
// uint8, uint16), int64 (and int, uint32), float64 (and float32),
// time.Time, []byte, GUID, or a Value. Any other type is an *InputError
// with ErrUnsupportedType.
func ValueOf(x any) (Value, error) {
	switch x := x.(type) {
	case Value:
		return x, nil
	case string:
		return StringValue(x), nil
	case bool:
		return BoolValue(x), nil
	case int8:
		return Int32Value(int32(x)), nil
	case int16:
		return Int32Value(int32(x)), nil
	case int32:
		return Int32Value(x), nil
	case uint8:
		return Int32Value(int32(x)), nil
	case uint16:
		return Int32Value(int32(x)), nil
	case int64:
		return Int64Value(x), nil
	case int:
		return Int64Value(int64(x)), nil
	case uint32:
		return Int64Value(int64(x)), nil
	case float64:
		return DoubleValue(x), nil
	case float32:
		return DoubleValue(float64(x)), nil
	case time.Time:
		return DateTimeValue(x), nil
	case []byte:
		return BinaryValue(x), nil
	case GUID:
		return GUIDValue(x), nil
	}
	return Value{}, inputErr("ValueOf", "", "", ErrUnsupportedType, "%T has no Edm type", x)
}

// Type is the value's EDM type (EdmString, EdmInt64, ...), or "" for the
// zero Value.
func (v Value) Type() string { return v.typ }

// IsZero reports the zero Value (no type), which cannot be written.
func (v Value) IsZero() bool { return v.typ == "" }

// Inferred reports an integral number that the payload sent without a type
// annotation, which the service does for Edm.Int32 and also for an
// Edm.Double whose value is integral: it reads as Int32, and AsDouble
// gives it as a float64 (see Entity on Doubles).
func (v Value) Inferred() bool { return v.inferred }

// Interface returns the value as its Go type: string, bool, int32, int64,
// float64, time.Time, []byte (a copy), GUID; nil for the zero Value.
func (v Value) Interface() any {
	switch v.typ {
	case EdmString:
		return v.s
	case EdmBoolean:
		return v.n != 0
	case EdmInt32:
		return int32(v.n)
	case EdmInt64:
		return v.n
	case EdmDouble:
		return v.f
	case EdmDateTime:
		return v.t
	case EdmBinary:
		return append([]byte(nil), v.b...)
	case EdmGUID:
		return v.g
	}
	return nil
}

// AsString returns an Edm.String's text.
func (v Value) AsString() (string, bool) { return v.s, v.typ == EdmString }

// AsBool returns an Edm.Boolean.
func (v Value) AsBool() (bool, bool) { return v.n != 0, v.typ == EdmBoolean }

// AsInt32 returns an Edm.Int32.
func (v Value) AsInt32() (int32, bool) { return int32(v.n), v.typ == EdmInt32 }

// AsInt64 returns an Edm.Int64, or an Edm.Int32 widened.
func (v Value) AsInt64() (int64, bool) { return v.n, v.typ == EdmInt64 || v.typ == EdmInt32 }

// AsDouble returns an Edm.Double, or an Edm.Int32 as a float64: an integral
// Double the payload sent without annotation reads as Int32 (Inferred),
// and this gives it back exactly.
func (v Value) AsDouble() (float64, bool) {
	switch v.typ {
	case EdmDouble:
		return v.f, true
	case EdmInt32:
		return float64(v.n), true
	}
	return 0, false
}

// AsTime returns an Edm.DateTime, in UTC.
func (v Value) AsTime() (time.Time, bool) { return v.t, v.typ == EdmDateTime }

// AsBinary returns a copy of an Edm.Binary's bytes.
func (v Value) AsBinary() ([]byte, bool) {
	if v.typ != EdmBinary {
		return nil, false
	}
	return append([]byte(nil), v.b...), true
}

// AsGUID returns an Edm.Guid.
func (v Value) AsGUID() (GUID, bool) { return v.g, v.typ == EdmGUID }

// Equal reports the same type and value (Doubles bit for bit, so NaN
// equals NaN; times by instant).
func (v Value) Equal(w Value) bool {
	if v.typ != w.typ {
		return false
	}
	switch v.typ {
	case EdmString:
		return v.s == w.s
	case EdmDouble:
		return math.Float64bits(v.f) == math.Float64bits(w.f)
	case EdmDateTime:
		return v.t.Equal(w.t)
	case EdmBinary:
		return string(v.b) == string(w.b)
	case EdmGUID:
		return v.g == w.g
	}
	return v.n == w.n
}

// String formats the value for logs and errors: its type and value.
func (v Value) String() string {
	switch v.typ {
	case "":
		return "<no value>"
	case EdmString:
		return strconv.Quote(v.s)
	case EdmBinary:
		return EdmBinary + "(" + base64.StdEncoding.EncodeToString(v.b) + ")"
	}
	return fmt.Sprintf("%s(%v)", v.typ, v.Interface())
}
