package fake

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/keyrules"
)

// Edm type names.
const (
	edmString   = "Edm.String"
	edmBoolean  = "Edm.Boolean"
	edmInt32    = "Edm.Int32"
	edmInt64    = "Edm.Int64"
	edmDouble   = "Edm.Double"
	edmDateTime = "Edm.DateTime"
	edmGUID     = "Edm.Guid"
	edmBinary   = "Edm.Binary"
)

// value is a typed property value, as the service stores it.
type value struct {
	typ string
	s   string // String, Guid (lowercase)
	i   int64  // Int32, Int64
	f   float64
	b   bool
	t   time.Time
	bin []byte
}

// minDateTime is the earliest Edm.DateTime the service stores.
var minDateTime = time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)

// size is the value's size as the service counts it.
func (v value) size() int {
	switch v.typ {
	case edmString:
		return 4 + 2*keyrules.UTF16Len(v.s)
	case edmBoolean:
		return 1
	case edmInt32:
		return 4
	case edmInt64, edmDouble, edmDateTime:
		return 8
	case edmGUID:
		return 16
	case edmBinary:
		return 4 + len(v.bin)
	}
	return 0
}

// parseValue types a JSON value by its annotation, or infers the type as the
// service does: strings, booleans, Int32 for integers in range, else Double.
func parseValue(raw json.RawMessage, annotation string) (value, bool) {
	raw = bytes.TrimSpace(raw)
	var s string
	isStr := len(raw) > 0 && raw[0] == '"'
	if isStr {
		if json.Unmarshal(raw, &s) != nil {
			return value{}, false
		}
	}
	text := s
	if !isStr {
		text = string(raw)
	}
	switch annotation {
	case "":
		switch {
		case isStr:
			return value{typ: edmString, s: s}, true
		case text == "true" || text == "false":
			return value{typ: edmBoolean, b: text == "true"}, true
		}
		if n, err := strconv.ParseInt(text, 10, 32); err == nil {
			return value{typ: edmInt32, i: n}, true
		}
		if f, err := strconv.ParseFloat(text, 64); err == nil {
			if f == math.Trunc(f) && f >= math.MinInt32 && f <= math.MaxInt32 && !strings.ContainsAny(text, ".eE") {
				return value{typ: edmInt32, i: int64(f)}, true
			}
			return value{typ: edmDouble, f: f}, true
		}
		return value{}, false
	case edmString:
		return value{typ: edmString, s: s}, isStr
	case edmBoolean:
		return value{typ: edmBoolean, b: text == "true"}, text == "true" || text == "false"
	case edmInt32:
		n, err := strconv.ParseInt(text, 10, 32)
		if err != nil {
			f, ferr := strconv.ParseFloat(text, 64)
			if ferr != nil || f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
				return value{}, false
			}
			n = int64(f)
		}
		return value{typ: edmInt32, i: n}, true
	case edmInt64:
		n, err := strconv.ParseInt(text, 10, 64)
		return value{typ: edmInt64, i: n}, err == nil
	case edmDouble:
		switch text {
		case "NaN":
			return value{typ: edmDouble, f: math.NaN()}, true
		case "Infinity", "INF":
			return value{typ: edmDouble, f: math.Inf(1)}, true
		case "-Infinity", "-INF":
			return value{typ: edmDouble, f: math.Inf(-1)}, true
		}
		f, err := strconv.ParseFloat(text, 64)
		return value{typ: edmDouble, f: f}, err == nil
	case edmDateTime:
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !isStr || t.Before(minDateTime) || keyrules.CheckTicksRange(t) != nil {
			return value{}, false
		}
		return value{typ: edmDateTime, t: t.UTC().Truncate(100)}, true
	case edmGUID:
		if !isStr || !validGUID(s) {
			return value{}, false
		}
		return value{typ: edmGUID, s: strings.ToLower(s)}, true
	case edmBinary:
		b, err := base64.StdEncoding.DecodeString(s)
		return value{typ: edmBinary, bin: b}, isStr && err == nil
	}
	return value{}, false
}

func validGUID(s string) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	_, err := hex.DecodeString(s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:])
	return err == nil
}

// appendJSON writes name (with its annotation when the type needs one) and
// the value, as the service's JSON with minimal metadata does.
func (v value) appendJSON(b []byte, name string, annotated bool) []byte {
	annotate := func(t string) {
		if !annotated {
			return
		}
		b = appendString(b, name+"@odata.type")
		b = append(b, ':')
		b = appendString(b, t)
		b = append(b, ',')
	}
	switch {
	case v.typ == edmInt64, v.typ == edmDateTime, v.typ == edmGUID, v.typ == edmBinary:
		annotate(v.typ)
	case v.typ == edmDouble && (math.IsNaN(v.f) || math.IsInf(v.f, 0)):
		// The service annotates a Double only when it travels as a string;
		// a finite one is a JSON number that keeps its decimal point.
		annotate(v.typ)
	}
	b = appendString(b, name)
	b = append(b, ':')
	switch v.typ {
	case edmString, edmGUID:
		b = appendString(b, v.s)
	case edmBoolean:
		b = strconv.AppendBool(b, v.b)
	case edmInt32:
		b = strconv.AppendInt(b, v.i, 10)
	case edmInt64:
		b = append(b, '"')
		b = strconv.AppendInt(b, v.i, 10)
		b = append(b, '"')
	case edmDouble:
		switch {
		case math.IsNaN(v.f):
			b = append(b, `"NaN"`...)
		case math.IsInf(v.f, 1):
			b = append(b, `"Infinity"`...)
		case math.IsInf(v.f, -1):
			b = append(b, `"-Infinity"`...)
		default:
			b = appendDouble(b, v.f)
		}
	case edmDateTime:
		b = append(b, '"')
		b = v.t.UTC().AppendFormat(b, edmDateTimeFormat)
		b = append(b, '"')
	case edmBinary:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v.bin)
		b = append(b, '"')
	}
	return b
}

// appendDouble writes a finite Double as the service does: an integral
// value with ".0" (2.0, so that it is read back as a Double, not an
// Int32), others in the shortest form, with an exponent only below 1e-7
// or from 1e21 on.
func appendDouble(b []byte, f float64) []byte {
	a := math.Abs(f)
	switch {
	case f == 0:
		return append(b, "0.0"...)
	case f == math.Trunc(f) && a < 1e21:
		return strconv.AppendFloat(b, f, 'f', 1, 64)
	case a >= 1e-7 && a < 1e21:
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, f, 'e', -1, 64)
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// compare orders two values of the same type; ok is false when the types
// differ (the service then does not match the comparison).
func compare(a, b value) (int, bool) {
	if a.typ != b.typ {
		return 0, false
	}
	switch a.typ {
	case edmString:
		return keyrules.Compare(a.s, b.s), true
	case edmGUID:
		return strings.Compare(a.s, b.s), true
	case edmBoolean:
		switch {
		case a.b == b.b:
			return 0, true
		case !a.b:
			return -1, true
		}
		return 1, true
	case edmInt32, edmInt64:
		return cmpOrdered(a.i, b.i), true
	case edmDouble:
		if math.IsNaN(a.f) || math.IsNaN(b.f) {
			return 0, false
		}
		return cmpOrdered(a.f, b.f), true
	case edmDateTime:
		return a.t.Compare(b.t), true
	case edmBinary:
		return bytes.Compare(a.bin, b.bin), true
	}
	return 0, false
}

func cmpOrdered[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
