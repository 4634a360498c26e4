package table

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tablekit/tablekit/internal/keyrules"
)

// Filter is an OData $filter expression. Every literal in it is typed and
// quoted by construction (strings with quotes doubled, 123L, datetime'…',
// guid'…', X'…'), so no value can change the expression's shape. The zero
// Filter matches everything. Build it with Prop, PK, RK, And, Or, Not and the
// helpers Partition, RowRange and RowPrefix; Kind says how the service will
// execute it.
type Filter struct {
	n   *fnode
	err error
}

type fnode struct {
	op   string // eq ne gt ge lt le | and or not
	prop string
	lit  string
	kids []*fnode
}

// Prop names a property in a filter, as the service's $filter does:
// Prop("RowKey").Ge(lo), Prop("Status").Eq("lost"). The keys and the
// timestamp are the properties PartitionKey, RowKey and Timestamp.
type Prop string

func (p Prop) cmp(op string, v any) Filter {
	name := string(p)
	switch name {
	case "PartitionKey", "RowKey", "Timestamp":
	default:
		if err := keyrules.ValidatePropertyName(name); err != nil {
			return Filter{err: &InputError{Op: "filter", Field: name, Rule: err}}
		}
	}
	lit, err := literal(v)
	if err != nil {
		return Filter{err: inputErr("filter", "", name, ErrBadFilter, "%v", err)}
	}
	return Filter{n: &fnode{op: op, prop: name, lit: lit}}
}

// Eq, Ne, Gt, Ge, Lt and Le compare the property with a Go value: string,
// bool, int8-int32, uint8, uint16 (Edm.Int32), int, int64, uint32
// (Edm.Int64), float32, float64, time.Time, GUID or []byte.
func (p Prop) Eq(v any) Filter { return p.cmp("eq", v) }

// Ne is "not equal" (see Eq).
func (p Prop) Ne(v any) Filter { return p.cmp("ne", v) }

// Gt is "greater than" (see Eq).
func (p Prop) Gt(v any) Filter { return p.cmp("gt", v) }

// Ge is "greater than or equal" (see Eq).
func (p Prop) Ge(v any) Filter { return p.cmp("ge", v) }

// Lt is "less than" (see Eq).
func (p Prop) Lt(v any) Filter { return p.cmp("lt", v) }

// Le is "less than or equal" (see Eq).
func (p Prop) Le(v any) Filter { return p.cmp("le", v) }

type literalErr string

func (e literalErr) Error() string { return string(e) }

func literal(v any) (string, error) {
	switch x := v.(type) {
	case string:
		if !utf8.ValidString(x) {
			return "", literalErr("string literal is not valid UTF-8")
		}
		return "'" + strings.ReplaceAll(x, "'", "''") + "'", nil
	case bool:
		return strconv.FormatBool(x), nil
	case int8:
		return strconv.FormatInt(int64(x), 10), nil
	case int16:
		return strconv.FormatInt(int64(x), 10), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case uint8:
		return strconv.FormatUint(uint64(x), 10), nil
	case uint16:
		return strconv.FormatUint(uint64(x), 10), nil
	case int:
		return strconv.FormatInt(int64(x), 10) + "L", nil
	case int64:
		return strconv.FormatInt(x, 10) + "L", nil
	case uint32:
		return strconv.FormatUint(uint64(x), 10) + "L", nil
	case float32:
		return doubleLiteral(float64(x), 32)
	case float64:
		return doubleLiteral(x, 64)
	case time.Time:
		if x.Unix() < minDateTimeUnix || keyrules.CheckTicksRange(x) != nil {
			return "", literalErr("datetime literal outside 1601-01-01..9999-12-31")
		}
		return "datetime'" + x.UTC().Format(dateTimeLayout) + "'", nil
	case GUID:
		return "guid'" + x.String() + "'", nil
	case []byte:
		return "X'" + hex.EncodeToString(x) + "'", nil
	case nil:
		return "", literalErr("nil literal: the service stores no nulls")
	}
	return "", literalErr("unsupported literal type " + strconv.Quote(typeNameOf(v)))
}

func doubleLiteral(x float64, bits int) (string, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "", literalErr("NaN and infinities cannot be compared in a filter")
	}
	s := strconv.FormatFloat(x, 'f', -1, bits)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s, nil
}

func typeNameOf(v any) string { return fmt.Sprintf("%T", v) }

func combine(op string, fs []Filter) Filter {
	var kids []*fnode
	for _, f := range fs {
		if f.err != nil {
			return f
		}
		if f.n == nil {
			continue
		}
		if f.n.op == op {
			kids = append(kids, f.n.kids...) // flatten: a and (b and c) = a and b and c
		} else {
			kids = append(kids, f.n)
		}
	}
	switch len(kids) {
	case 0:
		return Filter{}
	case 1:
		return Filter{n: kids[0]}
	}
	return Filter{n: &fnode{op: op, kids: kids}}
}

// And matches what every filter matches. Zero filters are ignored.
func And(fs ...Filter) Filter { return combine("and", fs) }

// Or matches what any filter matches. Zero filters are ignored.
func Or(fs ...Filter) Filter { return combine("or", fs) }

// Not matches what f does not.
func Not(f Filter) Filter {
	if f.err != nil || f.n == nil {
		return f
	}
	return Filter{n: &fnode{op: "not", kids: []*fnode{f.n}}}
}

// And is And(f, g...).
func (f Filter) And(g ...Filter) Filter { return And(append([]Filter{f}, g...)...) }

// Or is Or(f, g...).
func (f Filter) Or(g ...Filter) Filter { return Or(append([]Filter{f}, g...)...) }

// IsZero reports whether f matches everything.
func (f Filter) IsZero() bool { return f.n == nil && f.err == nil }

// Err is the first error made while building f.
func (f Filter) Err() error { return f.err }

// Comparisons counts the comparisons in f.
func (f Filter) Comparisons() int { return countCmp(f.n) }

func countCmp(n *fnode) int {
	if n == nil {
		return 0
	}
	if n.prop != "" {
		return 1
	}
	c := 0
	for _, k := range n.kids {
		c += countCmp(k)
	}
	return c
}

// Build returns the $filter text, or the first error: a bad property name,
// an unsupported literal, or more than MaxFilterComparisons comparisons.
func (f Filter) Build() (string, error) {
	if f.err != nil {
		return "", f.err
	}
	if c := f.Comparisons(); c > MaxFilterComparisons {
		return "", inputErr("filter", "", "", ErrBadFilter, "%d comparisons, the service allows %d", c, MaxFilterComparisons)
	}
	var b strings.Builder
	write(&b, f.n)
	return b.String(), nil
}

// String is Build's text, or a description of its error.
func (f Filter) String() string {
	s, err := f.Build()
	if err != nil {
		return "invalid filter: " + err.Error()
	}
	return s
}

func write(b *strings.Builder, n *fnode) {
	if n == nil {
		return
	}
	switch n.op {
	case "and", "or":
		for i, k := range n.kids {
			if i > 0 {
				b.WriteString(" " + n.op + " ")
			}
			b.WriteByte('(')
			write(b, k)
			b.WriteByte(')')
		}
	case "not":
		b.WriteString("not (")
		write(b, n.kids[0])
		b.WriteByte(')')
	default:
		b.WriteString(n.prop)
		b.WriteString(" " + n.op + " ")
		b.WriteString(n.lit)
	}
}

// Partition matches every entity of one partition.
func Partition(partitionKey string) Filter { return Prop("PartitionKey").Eq(partitionKey) }

// RowRange matches lo <= RowKey < hi in one partition; hi == "" means no
// upper bound.
func RowRange(partitionKey, lo, hi string) Filter {
	f := And(Prop("PartitionKey").Eq(partitionKey), Prop("RowKey").Ge(lo))
	if hi != "" {
		f = f.And(Prop("RowKey").Lt(hi))
	}
	return f
}

// RowPrefix matches the RowKeys of one partition that start with prefix,
// as a range query: RowKey ge prefix and lt the first string after every
// string that starts with prefix.
func RowPrefix(partitionKey, prefix string) Filter {
	lo, hi := keyrules.PrefixRange(prefix)
	return RowRange(partitionKey, lo, hi)
}

// QueryKind is how the service will execute a query, from cheapest to dearest.
type QueryKind int

const (
	// PointQuery names one PartitionKey and one RowKey.
	PointQuery QueryKind = iota + 1
	// RangeQuery names one PartitionKey and bounds the RowKey.
	RangeQuery
	// PartitionScan names one PartitionKey and filters on other properties.
	PartitionScan
	// TableScan names no single PartitionKey: every partition is read.
	TableScan
)

// String names the kind, as "range query".
func (k QueryKind) String() string {
	switch k {
	case PointQuery:
		return "point query"
	case RangeQuery:
		return "range query"
	case PartitionScan:
		return "partition scan"
	case TableScan:
		return "table scan"
	}
	return "QueryKind(" + strconv.Itoa(int(k)) + ")"
}

// Kind says how the service will execute a query with filter f, from
// the comparisons joined by "and" at its top level; no request is sent.
func (f Filter) Kind() QueryKind {
	var conj []*fnode
	switch {
	case f.n == nil:
		return TableScan
	case f.n.op == "and":
		conj = f.n.kids
	default:
		conj = []*fnode{f.n}
	}
	var pkEq, rkEq, rkRange bool
	for _, c := range conj {
		switch {
		case c.prop == "PartitionKey" && c.op == "eq":
			pkEq = true
		case c.prop == "RowKey" && c.op == "eq":
			rkEq = true
		case c.prop == "RowKey" && (c.op == "ge" || c.op == "gt" || c.op == "lt" || c.op == "le"):
			rkRange = true
		}
	}
	switch {
	case !pkEq:
		return TableScan
	case rkEq:
		return PointQuery
	case rkRange:
		return RangeQuery
	}
	return PartitionScan
}
