package table

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Value is one EDM-typed property value of an Entity. Build it with
// ValueOf; the zero Value has no type and is refused on write
// (ErrInvalidValue). A Value is immutable (ValueOf and AsBinary copy a
// Binary's bytes), so Entities can share them.
// It is 32 bytes, so maps of them stay small.
type Value struct {
	// s: a String's text, a Binary's bytes, a Guid's 16 bytes; for a
	// DateTime outside years 1 to 9999, the time (refused on write).
	s string
	// n: Int32, Int64, Boolean (0 or 1), a Double's IEEE bits, a
	// DateTime in 100 ns ticks since 0001-01-01 UTC.
	n int64
	k kind
	// inferred: an integral number the payload sent with no type
	// annotation, read as Int32 (see Entity on Doubles).
	inferred bool
}

// kind is a Value's EDM type, compactly.
type kind uint8

const (
	kindNone kind = iota
	kindString
	kindBoolean
	kindInt32
	kindInt64
	kindDouble
	kindDateTime
	kindBinary
	kindGUID
)

var kindNames = [...]string{"", EdmString, EdmBoolean, EdmInt32, EdmInt64, EdmDouble, EdmDateTime, EdmBinary, EdmGUID}

// ticksAt0001 is 0001-01-01T00:00:00Z in Unix seconds: DateTime values
// count 100 ns ticks from it, as .NET does, which covers every time the
// service stores (1601 to 9999) in an int64.
const ticksAt0001 = -62135596800

// stringValue is an Edm.String.
func stringValue(s string) Value { return Value{k: kindString, s: s} }

// boolValue is an Edm.Boolean.
func boolValue(b bool) Value {
	v := Value{k: kindBoolean}
	if b {
		v.n = 1
	}
	return v
}

// int32Value is an Edm.Int32.
func int32Value(n int32) Value { return Value{k: kindInt32, n: int64(n)} }

// int64Value is an Edm.Int64. It is written with its annotation, as a
// string, so values beyond 2^53 survive JSON.
func int64Value(n int64) Value { return Value{k: kindInt64, n: n} }

// doubleValue is an Edm.Double. It is written with its annotation, so an
// integral value such as 2.0 stays a Double; NaN and ±Inf are allowed.
func doubleValue(x float64) Value { return Value{k: kindDouble, n: int64(math.Float64bits(x))} }

// dateTimeValue is an Edm.DateTime, kept in UTC at 100 ns, as the service
// stores it (finer digits are dropped). The service stores 1601-01-01 to
// 9999-12-31; a time outside is refused on write.
func dateTimeValue(t time.Time) Value {
	t = t.UTC()
	if y := t.Year(); y < 1 || y > 9999 {
		return Value{k: kindDateTime, s: t.Format(time.RFC3339Nano)}
	}
	return Value{k: kindDateTime, n: (t.Unix()-ticksAt0001)*1e7 + int64(t.Nanosecond()/100)}
}

// binaryValue is an Edm.Binary (at most MaxBinaryBytes); b is copied.
func binaryValue(b []byte) Value { return Value{k: kindBinary, s: string(b)} }

// guidValue is an Edm.Guid.
func guidValue(g GUID) Value { return Value{k: kindGUID, s: string(g[:])} }

func (v Value) float() float64 { return math.Float64frombits(uint64(v.n)) }

func (v Value) time() time.Time {
	if v.s != "" {
		t, _ := time.Parse(time.RFC3339Nano, v.s)
		return t
	}
	return time.Unix(ticksAt0001+v.n/1e7, (v.n%1e7)*100).UTC()
}

func (v Value) guid() GUID {
	var g GUID
	copy(g[:], v.s)
	return g
}

// ValueOf makes the Value of a Go value, typed as the struct codec types
// a field of its type ("Field types" in the package documentation; NaN and
// ±Inf are allowed, a []byte is copied). The type is checked when the
// program compiles, so ValueOf cannot fail:
//
//	table.ValueOf("Don")          // Edm.String
//	table.ValueOf(int32(34))      // Edm.Int32
//	table.ValueOf(34)             // Edm.Int64, as an int field is stored
//	table.ValueOf(2.0)            // Edm.Double
//	table.ValueOf(time.Now())     // Edm.DateTime
//
// A DateTime is kept in UTC at 100 ns, as the service stores it (finer
// digits are dropped); one outside the service's range (years 1601 to
// 9999), or a Binary over MaxBinaryBytes, is refused on write.
func ValueOf[V string | bool | int8 | int16 | int32 | uint8 | uint16 | int64 | int | uint32 | float64 | float32 | time.Time | []byte | GUID](x V) Value {
	switch x := any(x).(type) {
	case string:
		return stringValue(x)
	case bool:
		return boolValue(x)
	case int8:
		return int32Value(int32(x))
	case int16:
		return int32Value(int32(x))
	case int32:
		return int32Value(x)
	case uint8:
		return int32Value(int32(x))
	case uint16:
		return int32Value(int32(x))
	case int64:
		return int64Value(x)
	case int:
		return int64Value(int64(x))
	case uint32:
		return int64Value(int64(x))
	case float64:
		return doubleValue(x)
	case float32:
		return doubleValue(float64(x))
	case time.Time:
		return dateTimeValue(x)
	case []byte:
		return binaryValue(x)
	case GUID:
		return guidValue(x)
	}
	panic("unreachable: ValueOf's constraint lists every case")
}

// Type is the value's EDM type (EdmString, EdmInt64, ...), or "" for the
// zero Value.
func (v Value) Type() string { return kindNames[v.k] }

// IsZero reports the zero Value (no type), which cannot be written.
func (v Value) IsZero() bool { return v.k == kindNone }

// Inferred reports an integral number that the payload sent without a type
// annotation, which the service does for Edm.Int32 and a backend may do
// for an integral Edm.Double: it reads as Int32, and AsDouble gives it as
// a float64 (see Entity on Doubles).
func (v Value) Inferred() bool { return v.inferred }

// Interface returns the value as its Go type: string, bool, int32, int64,
// float64, time.Time, []byte (a copy), GUID; nil for the zero Value.
func (v Value) Interface() any {
	switch v.k {
	case kindString:
		return v.s
	case kindBoolean:
		return v.n != 0
	case kindInt32:
		return int32(v.n)
	case kindInt64:
		return v.n
	case kindDouble:
		return v.float()
	case kindDateTime:
		return v.time()
	case kindBinary:
		return []byte(v.s)
	case kindGUID:
		return v.guid()
	}
	return nil
}

// AsString returns an Edm.String's text.
func (v Value) AsString() (string, bool) {
	if v.k != kindString {
		return "", false
	}
	return v.s, true
}

// AsBool returns an Edm.Boolean.
func (v Value) AsBool() (bool, bool) { return v.n != 0 && v.k == kindBoolean, v.k == kindBoolean }

// AsInt32 returns an Edm.Int32.
func (v Value) AsInt32() (int32, bool) {
	if v.k != kindInt32 {
		return 0, false
	}
	return int32(v.n), true
}

// AsInt64 returns an Edm.Int64, or an Edm.Int32 widened.
func (v Value) AsInt64() (int64, bool) {
	if v.k != kindInt64 && v.k != kindInt32 {
		return 0, false
	}
	return v.n, true
}

// AsDouble returns an Edm.Double, or an Edm.Int32 as a float64: an integral
// Double a payload sent without annotation reads as Int32 (Inferred), and
// this gives it back exactly.
func (v Value) AsDouble() (float64, bool) {
	switch v.k {
	case kindDouble:
		return v.float(), true
	case kindInt32:
		return float64(v.n), true
	}
	return 0, false
}

// AsTime returns an Edm.DateTime, in UTC.
func (v Value) AsTime() (time.Time, bool) {
	if v.k != kindDateTime {
		return time.Time{}, false
	}
	return v.time(), true
}

// AsBinary returns a copy of an Edm.Binary's bytes.
func (v Value) AsBinary() ([]byte, bool) {
	if v.k != kindBinary {
		return nil, false
	}
	return []byte(v.s), true
}

// AsGUID returns an Edm.Guid.
func (v Value) AsGUID() (GUID, bool) {
	if v.k != kindGUID {
		return GUID{}, false
	}
	return v.guid(), true
}

// Equal reports the same type and value (Doubles bit for bit, so NaN
// equals NaN; times at 100 ns).
func (v Value) Equal(w Value) bool { return v.k == w.k && v.n == w.n && v.s == w.s }

// Same is Equal, except that an Inferred Int32 (an integral number read
// without annotation) is the same as a Double of equal value: what a
// backend that omits the annotation of integral Doubles sends back for
// ValueOf(2.0). Compare stored entities with it (index copies against
// their primaries, for one).
func (v Value) Same(w Value) bool {
	if v.Equal(w) {
		return true
	}
	if v.inferred && w.k == kindDouble {
		return float64(v.n) == w.float()
	}
	if w.inferred && v.k == kindDouble {
		return float64(w.n) == v.float()
	}
	return false
}

// String formats the value for logs and errors: its type and value.
func (v Value) String() string {
	switch v.k {
	case kindNone:
		return "<no value>"
	case kindString:
		return strconv.Quote(v.s)
	case kindBinary:
		return EdmBinary + "(" + base64.StdEncoding.EncodeToString([]byte(v.s)) + ")"
	}
	return fmt.Sprintf("%s(%v)", v.Type(), v.Interface())
}
