package fake

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/tablekit/tablekit/internal/keyrules"
)

// The OData $filter subset the Table service supports: comparisons (eq ne
// gt ge lt le) of a property with a literal, and Boolean properties alone,
// joined by and, or, not and parentheses; operators in lower case only,
// not binding tighter than a comparison. Literals: 'string' ('' escapes a quote), 123 (Int32), 123L
// (Int64), 1.5 (Double), true/false, datetime'…', guid'…', X'…' / binary'…'.

type expr interface {
	eval(get func(string) (value, bool)) bool
}

type cmpExpr struct {
	prop   string
	op     string
	lit    value
	negate bool // (not prop) op lit: prop must be a Boolean
}

// propExpr is a Boolean property standing alone as a condition, or
// negated: it matches when the property is a Boolean of that value.
type propExpr struct {
	prop   string
	negate bool
}

func (e propExpr) eval(get func(string) (value, bool)) bool {
	v, ok := get(e.prop)
	return ok && v.typ == edmBoolean && v.b != e.negate
}

type boolExpr struct {
	op   string // and, or
	l, r expr
}

type notExpr struct{ e expr }

func (c cmpExpr) eval(get func(string) (value, bool)) bool {
	v, ok := get(c.prop)
	if !ok {
		return false
	}
	if c.negate {
		if v.typ != edmBoolean {
			return false // not applies to Booleans only
		}
		v.b = !v.b
	}
	n, ok := compare(v, c.lit)
	if !ok {
		return false
	}
	switch c.op {
	case "eq":
		return n == 0
	case "ne":
		return n != 0
	case "gt":
		return n > 0
	case "ge":
		return n >= 0
	case "lt":
		return n < 0
	case "le":
		return n <= 0
	}
	return false
}

func (b boolExpr) eval(get func(string) (value, bool)) bool {
	if b.op == "and" {
		return b.l.eval(get) && b.r.eval(get)
	}
	return b.l.eval(get) || b.r.eval(get)
}

func (n notExpr) eval(get func(string) (value, bool)) bool { return !n.e.eval(get) }

type filterParser struct {
	s    string
	pos  int
	cmps int
}

// maxComparisons is the service's limit on comparisons in one filter.
const maxComparisons = 15

func parseFilter(s string) (expr, error) {
	p := &filterParser{s: s}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.pos != len(p.s) {
		return nil, p.errf("unexpected %q", p.s[p.pos:])
	}
	if p.cmps > maxComparisons {
		return nil, fmt.Errorf("the filter has %d comparisons; at most %d are allowed", p.cmps, maxComparisons)
	}
	return e, nil
}

func (p *filterParser) errf(format string, args ...any) error {
	return fmt.Errorf("filter syntax error at %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *filterParser) ws() {
	for p.pos < len(p.s) && p.s[p.pos] == ' ' {
		p.pos++
	}
}

// word reads the next identifier-like token without consuming it.
func (p *filterParser) word() string {
	p.ws()
	i := p.pos
	for i < len(p.s) {
		r := rune(p.s[i])
		if r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r) || r >= 0x80 {
			i++
			continue
		}
		break
	}
	return p.s[p.pos:i]
}

// The grammar, after the service's OData: operators are lower case;
// "not" binds tighter than a comparison, so not P eq v is (not P) eq v;
// a Boolean property stands alone as a condition.
//
//	or      := and ("or" and)*
//	and     := term ("and" term)*
//	term    := "not"* ( "(" or ")" | property [op literal] )

// keyword reports whether the next word is w, lower case as the service
// requires; the same word in another case is an error.
func (p *filterParser) keyword(w string) (bool, error) {
	got := p.word()
	if got == w {
		return true, nil
	}
	if strings.EqualFold(got, w) {
		return false, p.errf("operator %q must be lower case", got)
	}
	return false, nil
}

func (p *filterParser) or() (expr, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for {
		ok, err := p.keyword("or")
		if err != nil {
			return nil, err
		}
		if !ok {
			return l, nil
		}
		p.pos += 2
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = boolExpr{"or", l, r}
	}
}

func (p *filterParser) and() (expr, error) {
	l, err := p.term()
	if err != nil {
		return nil, err
	}
	for {
		ok, err := p.keyword("and")
		if err != nil {
			return nil, err
		}
		if !ok {
			return l, nil
		}
		p.pos += 3
		r, err := p.term()
		if err != nil {
			return nil, err
		}
		l = boolExpr{"and", l, r}
	}
}

func (p *filterParser) term() (expr, error) {
	nots := 0
	for {
		ok, err := p.keyword("not")
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		p.pos += 3
		nots++
	}
	negate := nots%2 == 1
	p.ws()
	if p.pos < len(p.s) && p.s[p.pos] == '(' {
		p.pos++
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		p.ws()
		if p.pos >= len(p.s) || p.s[p.pos] != ')' {
			return nil, p.errf("missing )")
		}
		p.pos++
		if negate {
			e = notExpr{e}
		}
		return e, nil
	}
	prop := p.word()
	if prop == "" {
		return nil, p.errf("expected a property name")
	}
	p.pos += len(prop)
	w := p.word()
	op := ""
	for _, o := range []string{"eq", "ne", "gt", "ge", "lt", "le"} {
		if w == o {
			op = o
		} else if strings.EqualFold(w, o) {
			return nil, p.errf("operator %q must be lower case", w)
		}
	}
	if op == "" {
		if nots > 0 {
			return propExpr{prop: prop, negate: negate}, nil
		}
		return propExpr{prop: prop}, nil
	}
	p.pos += 2
	lit, err := p.literal()
	if err != nil {
		return nil, err
	}
	p.cmps++
	return cmpExpr{prop: prop, op: op, lit: lit, negate: negate}, nil
}

// quoted reads a quoted literal, in which a doubled quote stands for one.
func (p *filterParser) quoted() (string, error) {
	if p.pos >= len(p.s) || p.s[p.pos] != '\'' {
		return "", p.errf("expected '")
	}
	var b strings.Builder
	for i := p.pos + 1; i < len(p.s); i++ {
		if p.s[i] == '\'' {
			if i+1 < len(p.s) && p.s[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			p.pos = i + 1
			return b.String(), nil
		}
		b.WriteByte(p.s[i])
	}
	return "", p.errf("unterminated string")
}

func (p *filterParser) literal() (value, error) {
	p.ws()
	if p.pos >= len(p.s) {
		return value{}, p.errf("expected a literal")
	}
	if p.s[p.pos] == '\'' {
		s, err := p.quoted()
		return value{typ: edmString, s: s}, err
	}
	w := p.word()
	lw := strings.ToLower(w)
	switch {
	case lw == "true" || lw == "false":
		p.pos += len(w)
		return value{typ: edmBoolean, b: lw == "true"}, nil
	case lw == "datetime" || lw == "guid" || lw == "x" || lw == "binary":
		p.pos += len(w)
		s, err := p.quoted()
		if err != nil {
			return value{}, err
		}
		switch lw {
		case "datetime":
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return value{}, p.errf("bad datetime %q", s)
			}
			return value{typ: edmDateTime, t: t.UTC()}, nil
		case "guid":
			if !validGUID(s) {
				return value{}, p.errf("bad guid %q", s)
			}
			return value{typ: edmGUID, s: strings.ToLower(s)}, nil
		}
		b, err := hex.DecodeString(s)
		if err != nil {
			return value{}, p.errf("bad binary %q", s)
		}
		return value{typ: edmBinary, bin: b}, nil
	}
	// A number: digits, sign, dot, exponent, then an optional type suffix.
	i := p.pos
	for i < len(p.s) && strings.IndexByte("+-0123456789.eE", p.s[i]) >= 0 {
		i++
	}
	num := p.s[p.pos:i]
	suffix := byte(0)
	if i < len(p.s) && strings.IndexByte("LlDdMmFf", p.s[i]) >= 0 {
		suffix = p.s[i] | 0x20
		i++
	}
	if num == "" {
		return value{}, p.errf("expected a literal, got %q", w)
	}
	p.pos = i
	switch {
	case suffix == 'l':
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return value{}, p.errf("bad Int64 %q", num)
		}
		return value{typ: edmInt64, i: n}, nil
	case suffix != 0 || strings.ContainsAny(num, ".eE"):
		f, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return value{}, p.errf("bad Double %q", num)
		}
		return value{typ: edmDouble, f: f}, nil
	}
	n, err := strconv.ParseInt(num, 10, 32)
	if err != nil {
		return value{}, p.errf("bad Int32 %q", num)
	}
	return value{typ: edmInt32, i: n}, nil
}

// keyBounds are the keys a query's matches lie between: the service
// reads them from the PartitionKey comparisons (and, within one partition,
// the RowKey ones) in a filter's chain of ands, and scans only from lo to
// hi. An unset side is the table's start or end.
type keyBounds struct {
	loPK, loRK     string
	loSet, loAfter bool // loAfter: the partition loPK itself is excluded
	hiPK, hiRK     string
	hiSet          bool
	hiPKIncl       bool // hiPK itself is in range (le, eq)
	hiRKSet        bool // within partition hiPK, RowKeys up to hiRK
	hiRKIncl       bool
}

// boundsOf collects e's key bounds; a filter with none (or an or at its
// top) has the whole table as its range.
func boundsOf(e expr) keyBounds {
	var b keyBounds
	var rks []cmpExpr
	var walk func(e expr)
	walk = func(e expr) {
		switch x := e.(type) {
		case boolExpr:
			if x.op == "and" {
				walk(x.l)
				walk(x.r)
			}
		case cmpExpr:
			if x.negate || x.lit.typ != edmString {
				return
			}
			switch x.prop {
			case "PartitionKey":
				b.pk(x.op, x.lit.s)
			case "RowKey":
				rks = append(rks, x)
			}
		}
	}
	if e != nil {
		walk(e)
	}
	// RowKey bounds hold the scan only when one partition is in range.
	if !b.loSet || !b.hiSet || b.loAfter || !b.hiPKIncl || b.loPK != b.hiPK {
		return b
	}
	for _, x := range rks {
		if x.op == "eq" || x.op == "ge" || x.op == "gt" {
			if keyrules.Compare(x.lit.s, b.loRK) > 0 {
				b.loRK = x.lit.s
			}
		}
		if x.op == "eq" || x.op == "le" || x.op == "lt" {
			incl := x.op != "lt"
			if c := keyrules.Compare(x.lit.s, b.hiRK); !b.hiRKSet || c < 0 || c == 0 && !incl {
				b.hiRK, b.hiRKIncl, b.hiRKSet = x.lit.s, incl, true
			}
		}
	}
	return b
}

// pk narrows b by the comparison PartitionKey op v.
func (b *keyBounds) pk(op, v string) {
	if op == "eq" || op == "ge" || op == "gt" {
		after := op == "gt"
		if c := keyrules.Compare(v, b.loPK); !b.loSet || c > 0 || c == 0 && after {
			b.loPK, b.loAfter, b.loSet = v, after, true
		}
	}
	if op == "eq" || op == "le" || op == "lt" {
		incl := op != "lt"
		if c := keyrules.Compare(v, b.hiPK); !b.hiSet || c < 0 || c == 0 && !incl {
			b.hiPK, b.hiPKIncl, b.hiSet = v, incl, true
		}
	}
}

// holds reports whether e is at or before the range's end.
func (b keyBounds) holds(e *entity) bool {
	if !b.hiSet {
		return true
	}
	c := keyrules.Compare(e.pk, b.hiPK)
	switch {
	case c < 0:
		return true
	case c > 0 || !b.hiPKIncl:
		return false
	case !b.hiRKSet:
		return true
	}
	c = keyrules.Compare(e.rk, b.hiRK)
	return c < 0 || c == 0 && b.hiRKIncl
}

// rowKeys reports the RowKeys that e, a filter whose key bounds name one
// partition in, matches and nothing else: e is a PartitionKey eq
// comparison and beside it, in a chain of two ands, one RowKey eq
// comparison or a disjunction of them (PartitionKey eq 'p' and (RowKey eq
// 'a' or RowKey eq 'b')), the shape of a batched read. keys comes back
// sorted in the service's order, without repeats. Any other filter (a
// third clause, a range, ne, not) is not ok.
func rowKeys(e expr) (pk string, keys []string, ok bool) {
	b, isAnd := e.(boolExpr)
	if !isAnd || b.op != "and" {
		return "", nil, false
	}
	keyEq := func(e expr, prop string) (string, bool) {
		c, ok := e.(cmpExpr)
		if !ok || c.prop != prop || c.op != "eq" || c.negate || c.lit.typ != edmString {
			return "", false
		}
		return c.lit.s, true
	}
	var collect func(e expr) bool
	collect = func(e expr) bool {
		if o, ok := e.(boolExpr); ok && o.op == "or" {
			return collect(o.l) && collect(o.r)
		}
		rk, ok := keyEq(e, "RowKey")
		keys = append(keys, rk)
		return ok
	}
	pkSide, rkSide := b.l, b.r
	pk, ok = keyEq(pkSide, "PartitionKey")
	if !ok {
		pkSide, rkSide = b.r, b.l
		if pk, ok = keyEq(pkSide, "PartitionKey"); !ok {
			return "", nil, false
		}
	}
	if !collect(rkSide) {
		return "", nil, false
	}
	slices.SortFunc(keys, keyrules.Compare)
	return pk, slices.Compact(keys), true
}
