package table

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/rowkind"
)

// Unmarshal decodes an entity as the service returns it into v, a pointer to
// a struct that embeds Meta. v is zeroed first, so a property the entity
// lacks leaves its field at the zero value.
func (c *codec) Unmarshal(data []byte, v any) error {
	rv, err := structValue("decode", v)
	if err != nil {
		return err
	}
	p, err := c.planFor(rv.Type())
	if err != nil {
		return err
	}
	if p.hasEncrypted() {
		return refuseEncrypted("decode", p)
	}
	return p.decode(data, rv)
}

// A member named "X@odata.type" annotates X's EDM type; names that begin
// "odata." are the service's metadata.
var (
	annotationSuffix = []byte("@odata.type")
	odataPrefix      = []byte("odata.")
)

// jsonValue is one value of a flat JSON object.
type jsonValue struct {
	raw []byte // as it appears, quotes included
	str bool   // a string: text holds its contents, unescaped
}

// scanObject calls fn for every member of a flat JSON object. Nested objects
// and arrays are refused: the service never sends them in an entity.
//
// fn gets each member's name as bytes of data (unescaped into a new slice
// only if it holds an escape), valid during the call: most names are
// compared or looked up and dropped, which needs no string (Go converts
// for a switch, a comparison or a map index without allocating), and a
// string made for every name was a third of a wide entity's allocations
// on a point read. A callback that keeps a name copies it.
func scanObject(data []byte, fn func(key []byte, v jsonValue) error) error {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return inputErr("decode", "", "", ErrInvalidValue, "entity is not a JSON object")
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return badJSON(i)
		}
		end, ok := stringEnd(data, i)
		if !ok {
			return badJSON(i)
		}
		key := data[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			key = []byte(unquote(data[i:end]))
		}
		i = skipWS(data, end)
		if i >= len(data) || data[i] != ':' {
			return badJSON(i)
		}
		i = skipWS(data, i+1)
		if i >= len(data) {
			return badJSON(i)
		}
		var v jsonValue
		switch c := data[i]; {
		case c == '"':
			end, ok = stringEnd(data, i)
			if !ok {
				return badJSON(i)
			}
			v = jsonValue{raw: data[i:end], str: true}
		case c == '{' || c == '[':
			return inputErr("decode", "", string(key), ErrInvalidValue, "nested JSON values are not entity properties")
		default:
			end = i
			for end < len(data) && data[end] != ',' && data[end] != '}' && data[end] != ' ' && data[end] != '\n' && data[end] != '\r' && data[end] != '\t' {
				end++
			}
			v = jsonValue{raw: data[i:end]}
		}
		if err := fn(key, v); err != nil {
			return err
		}
		i = skipWS(data, end)
		if i >= len(data) {
			return badJSON(i)
		}
		if data[i] == '}' {
			return nil
		}
		if data[i] != ',' {
			return badJSON(i)
		}
		i = skipWS(data, i+1)
	}
}

func badJSON(at int) error {
	return inputErr("decode", "", "", ErrInvalidValue, "malformed JSON entity at byte %d", at)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// stringEnd returns the index just past the closing quote of the string at i.
func stringEnd(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

// unquote returns the contents of a JSON string literal. The escapes the
// service writes (every entity's odata.etag holds \", and values may hold
// \\, \/ and the control escapes) are undone here; a \u escape, a stray
// backslash, a control byte or invalid UTF-8 (which tablekit's encoder
// never writes) go to encoding/json, whose answer this matches byte for
// byte (FuzzUnquoteMatchesEncodingJSON). Handing every escaped string to
// encoding/json cost a point read of a 40-property entity a sixth of its
// decoding, for the ETag alone.
func unquote(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	i := bytes.IndexByte(inner, '\\')
	valid := utf8.Valid(inner)
	if i < 0 && valid {
		return string(inner)
	}
	if !valid || hasControl(inner) {
		return unquoteJSON(raw)
	}
	var out strings.Builder
	out.Grow(len(inner))
	for i >= 0 {
		out.Write(inner[:i])
		if i+1 >= len(inner) {
			return unquoteJSON(raw)
		}
		switch c := inner[i+1]; c {
		case '"', '\\', '/':
			out.WriteByte(c)
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		default:
			return unquoteJSON(raw)
		}
		inner = inner[i+2:]
		i = bytes.IndexByte(inner, '\\')
	}
	out.Write(inner)
	return out.String()
}

// hasControl reports a byte JSON requires escaped (under 0x20), which
// makes the literal invalid: encoding/json then refuses it.
func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// unquoteJSON is unquote by encoding/json, for the rare string it does
// not undo itself; a literal encoding/json refuses keeps its raw contents.
func unquoteJSON(raw []byte) string {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return string(raw[1 : len(raw)-1])
	}
	return s
}

func (p *plan) decode(data []byte, rv reflect.Value) error {
	if p.raw {
		return decodeEntity(data, rv.Addr().Interface().(*Entity))
	}
	rv.SetZero()
	meta := rv.FieldByIndex(p.meta).Addr().Interface().(*Meta)
	var extra Extra
	var types map[string]string
	keyProps := 0 // key components read from their properties
	// next is the field expected next: tablekit writes a type's fields in
	// its plan's order and Azurite answers in the order written (the
	// service documents no order), so most names match it and skip
	// hashing into byName; a name out of order costs one comparison.
	next := 0
	typ := p.typ.String()
	err := scanObject(data, func(key []byte, v jsonValue) error {
		switch string(key) {
		case "PartitionKey":
			meta.PartitionKey = unquote(v.raw)
			return nil
		case "RowKey":
			meta.RowKey = unquote(v.raw)
			return nil
		case "Timestamp":
			t, err := time.Parse(time.RFC3339Nano, unquote(v.raw))
			if err == nil {
				meta.Timestamp = t.UTC()
			}
			return nil
		case "odata.etag":
			meta.ETag = azcore.ETag(unquote(v.raw))
			return nil
		}
		if name, ok := bytes.CutSuffix(key, annotationSuffix); ok {
			if p.extra != nil {
				if types == nil {
					types = map[string]string{}
				}
				types[string(name)] = unquote(v.raw)
			}
			return nil
		}
		if bytes.HasPrefix(key, odataPrefix) {
			return nil
		}
		idx, ok := next, next < len(p.fields) && p.fields[next].name == string(key)
		if !ok {
			idx, ok = p.byName[string(key)]
		}
		if ok {
			next = idx + 1
		}
		if !ok {
			// The marks of tablekit's own rows are no user's property:
			// a query's $select brings them back (null) so that such
			// rows are left out (see Table.otherKind).
			if p.extra != nil && !rowkind.IsReserved(string(key)) {
				if extra == nil {
					extra = Extra{}
				}
				extra[string(key)] = Property{Value: bytes.Clone(v.raw)}
			}
			return nil
		}
		f := &p.fields[idx]
		if f.key {
			keyProps++
		}
		if err := decodeField(f, fieldByIndex(rv, f.index), v); err != nil {
			return &InputError{Op: "decode", Type: typ, Field: f.name, Rule: decodeRule(err), Detail: err.Error()}
		}
		return nil
	})
	if err != nil {
		if ie, ok := err.(*InputError); ok && ie.Type == "" {
			ie.Type = typ
		}
		return err
	}
	// Key components come from their properties, which every write of
	// the type stores; from the keys only for an entity that lacks them
	// (written by other code, or read with a $select without them). An
	// index copy has keys of its own, so the properties go first.
	if keyProps < p.keyParts() {
		if err := p.fillKeyFields(rv, meta); err != nil {
			return err
		}
	}
	if extra != nil {
		for name, prop := range extra {
			prop.Type = types[name]
			extra[name] = prop
		}
		rv.FieldByIndex(p.extra).Set(reflect.ValueOf(extra))
	}
	return nil
}

func decodeField(f *field, fv reflect.Value, v jsonValue) error {
	if string(v.raw) == "null" {
		return nil
	}
	if f.ptr {
		n := reflect.New(fv.Type().Elem())
		fv.Set(n)
		fv = n.Elem()
	}
	text := func() string {
		if v.str {
			return unquote(v.raw)
		}
		return string(v.raw)
	}
	switch f.kind {
	case kString:
		if !v.str {
			return errWant("a string", v)
		}
		fv.SetString(unquote(v.raw))
	case kBool:
		b, err := strconv.ParseBool(string(v.raw))
		if err != nil {
			return errWant("a boolean", v)
		}
		fv.SetBool(b)
	case kInt32, kInt64:
		s := text()
		if fv.CanInt() {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				// Numbers that passed through float64 may carry ".0" or an exponent.
				x, ferr := strconv.ParseFloat(s, 64)
				if ferr != nil || x != math.Trunc(x) || x < math.MinInt64 || x >= math.MaxInt64 {
					return errWant("an integer", v)
				}
				n = int64(x)
			}
			if fv.OverflowInt(n) {
				return errWant("an integer that fits "+fv.Type().String(), v)
			}
			fv.SetInt(n)
		} else {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil || fv.OverflowUint(n) {
				return errWant("an integer that fits "+fv.Type().String(), v)
			}
			fv.SetUint(n)
		}
	case kDouble:
		s := text()
		var x float64
		switch s {
		case "NaN":
			x = math.NaN()
		case "Infinity", "INF":
			x = math.Inf(1)
		case "-Infinity", "-INF":
			x = math.Inf(-1)
		default:
			var err error
			if x, err = strconv.ParseFloat(s, 64); err != nil {
				return errWant("a number", v)
			}
		}
		fv.SetFloat(x)
	case kTime:
		t, err := time.Parse(time.RFC3339Nano, text())
		if err != nil {
			return errWant("an Edm.DateTime", v)
		}
		fv.Set(reflect.ValueOf(t.UTC()))
	case kBinary:
		raw, err := base64.StdEncoding.DecodeString(text())
		if err != nil {
			return errWant("base64", v)
		}
		if f.gzip {
			if raw, err = gunzipProp(raw); err != nil {
				return err
			}
		}
		fv.SetBytes(raw)
	case kGUID:
		g, err := ParseGUID(text())
		if err != nil {
			return err
		}
		fv.Set(reflect.ValueOf(g))
	case kText:
		return fv.Addr().Interface().(interface{ UnmarshalText([]byte) error }).UnmarshalText([]byte(text()))
	case kJSON:
		return json.Unmarshal([]byte(text()), fv.Addr().Interface())
	}
	return nil
}

func errWant(want string, v jsonValue) error {
	s := string(v.raw)
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return &decodeErr{want: want, got: s}
}

type decodeErr struct{ want, got string }

func (e *decodeErr) Error() string { return "want " + e.want + ", got " + e.got }

// timestampFromETag recovers the write time the service encodes in an ETag
// (W/"datetime'2026-11-21T21%3A15%3A46.9047177Z'").
func timestampFromETag(etag azcore.ETag) (time.Time, bool) {
	s := string(etag)
	i := strings.Index(s, "datetime'")
	if i < 0 {
		return time.Time{}, false
	}
	s = s[i+len("datetime'"):]
	j := strings.IndexByte(s, '\'')
	if j < 0 {
		return time.Time{}, false
	}
	u, err := url.PathUnescape(s[:j])
	if err != nil {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, u)
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}
