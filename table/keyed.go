package table

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/keys"
)

// ErrKeyLayout: a struct's key declaration is malformed: an unknown
// encoding, a component type the encoding cannot hold, a gap or a
// duplicate in the component order, a raw component that is not last, or
// another option (omitempty, json, encrypt) on a component. Raised when the
// type's plan is built: New, or the first use of the type.
var ErrKeyLayout = errors.New("bad key layout")

// ErrKeyMismatch: Meta holds a PartitionKey or RowKey that differs from the
// one the struct's key fields compose: set by hand, or a component field
// changed after a read.
var ErrKeyMismatch = errors.New("key differs from the one its fields compose")

type keyEnc uint8

const (
	encTuple keyEnc = iota + 1
	encRaw
	encInt      // keys.Int64 / keyrules.Uint64
	encFixed    // keys.FixedUint, width
	encDesc     // keyrules.DescInt64 / keyrules.DescUint64
	encDescFix  // 10^width-1-n in width digits
	encTicks    // keys.Ticks
	encInvTicks // keys.InvertedTicks
)

// keyTerm ends every component but a raw one; the encodings never emit it
// inside a component, and it sorts below every character they emit.
const keyTerm = '!'

// keyPart is one component of a composite key.
type keyPart struct {
	goName string // the Go field, for errors
	name   string // its property name, for FieldOf's errors
	index  []int
	pos    int
	enc    keyEnc
	width  int
	signed bool
	typ    reflect.Type
	// tuple: the tuple encoding was asked for by name; a string that is
	// its key's only component is otherwise stored as it is.
	tuple bool
	// bare: the key's only component, written without the terminator
	// that separates components (the guide's "emp_000123").
	bare bool
}

// keyLayout is how one key (PartitionKey or RowKey) is composed.
type keyLayout struct {
	which  string // "PartitionKey" or "RowKey"
	prefix string // the fixed prefix, tuple-encoded, or ""
	parts  []keyPart
}

// maxDescFixedWidth: 10^N-1 must fit a uint64 for desc with pad:N.
const maxDescFixedWidth = 19

func keyLayoutErr(p *plan, field, format string, args ...any) error {
	return inputErr("plan", p.typ.String(), field, ErrKeyLayout, format, args...)
}

// metaKeyOpts reads the fixed prefixes from the embedded Meta's tag.
func (p *plan) metaKeyOpts(opts string) error {
	for _, o := range strings.Split(opts, ",") {
		which, v, ok := strings.Cut(o, ":")
		switch {
		case o == "":
			continue
		case ok && (which == "pkprefix" || which == "rkprefix"):
			// The prefix is literal, as the guide writes its keys
			// ("empid_000123"): its separator is part of it.
			if v == "" {
				return keyLayoutErr(p, "Meta", "%s wants a non-empty prefix", which)
			}
			if err := keyrules.ValidateRowKey(v); err != nil {
				return keyLayoutErr(p, "Meta", "%s:%s: %v", which, v, err)
			}
			l := p.layout(which == "pkprefix")
			l.prefix = v
		default:
			return keyLayoutErr(p, "Meta", "unknown option %q on Meta; it takes pkprefix:X and rkprefix:Y", o)
		}
	}
	return nil
}

func (p *plan) layout(pk bool) *keyLayout {
	if pk {
		if p.pk == nil {
			p.pk = &keyLayout{which: "PartitionKey"}
		}
		return p.pk
	}
	if p.rk == nil {
		p.rk = &keyLayout{which: "RowKey"}
	}
	return p.rk
}

// keyField handles a field whose tag options declare a key component;
// isKey is false (and nothing is done) for an ordinary field.
func (p *plan) keyField(sf reflect.StructField, index []int, name, opts string) (isKey bool, err error) {
	var (
		which            string
		pos              int
		encName          string
		pad, desc        bool
		width            int
		other, encOption string
	)
	for _, o := range strings.Split(opts, ",") {
		key, val, hasVal := strings.Cut(o, ":")
		switch key {
		case "pk", "rk":
			if which != "" {
				return true, keyLayoutErr(p, sf.Name, "a field is one component of one key; %q and %q both given", which, key)
			}
			which, pos = key, 1
			if hasVal {
				n, err := strconv.Atoi(val)
				if err != nil || n < 1 {
					return true, keyLayoutErr(p, sf.Name, "%s:%s: the position is 1, 2, …", key, val)
				}
				pos = n
			}
		case "tuple", "raw", "ticks", "invticks":
			if encName != "" || hasVal {
				return true, keyLayoutErr(p, sf.Name, "one encoding per component, got %q after %q", o, encName)
			}
			encName, encOption = key, o
		case "pad":
			pad, encOption = true, o
			if hasVal {
				n, err := strconv.Atoi(val)
				if err != nil || n < 1 || n > keyrules.Uint64Width {
					return true, keyLayoutErr(p, sf.Name, "pad:%s: the width is 1 to %d digits", val, keyrules.Uint64Width)
				}
				width = n
			}
		case "desc":
			desc, encOption = true, o
		case "":
		default:
			if other == "" {
				other = o
			}
		}
	}
	if which == "" {
		if encOption != "" {
			return true, keyLayoutErr(p, sf.Name, "the encoding %q applies to key components: add pk or rk", encOption)
		}
		return false, nil
	}
	if other != "" {
		switch other {
		case "omitempty", "json", "encrypt":
			return true, keyLayoutErr(p, sf.Name, "%q cannot apply to a key component: its value is the key, always written and never encrypted", other)
		}
		return true, keyLayoutErr(p, sf.Name, "unknown key encoding %q; one of tuple, raw, pad, pad:N, desc, ticks, invticks", other)
	}
	part := keyPart{goName: sf.Name, name: name, index: index, pos: pos, typ: sf.Type}
	t := sf.Type
	switch {
	case t == timeType:
		if pad || desc || (encName != "" && encName != "ticks" && encName != "invticks") {
			return true, keyLayoutErr(p, sf.Name, "a time.Time component is encoded as ticks or invticks, not %q", encOption)
		}
		part.enc = encTicks
		if encName == "invticks" {
			part.enc = encInvTicks
		}
	case t.Kind() == reflect.String:
		if pad || desc || (encName != "" && encName != "tuple" && encName != "raw") {
			return true, keyLayoutErr(p, sf.Name, "a string component is encoded as tuple or raw, not %q", encOption)
		}
		part.enc, part.tuple = encTuple, encName == "tuple"
		if encName == "raw" {
			part.enc = encRaw
		}
	case isIntKind(t.Kind()):
		if encName != "" {
			return true, keyLayoutErr(p, sf.Name, "an integer component is encoded as pad, pad:N or desc, not %q", encName)
		}
		part.signed = t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64
		part.width = width
		switch {
		case desc && width > maxDescFixedWidth:
			return true, keyLayoutErr(p, sf.Name, "desc with pad:N takes N up to %d", maxDescFixedWidth)
		case desc && width > 0:
			part.enc = encDescFix
		case desc:
			part.enc = encDesc
		case width > 0:
			part.enc = encFixed
		default:
			part.enc = encInt
		}
	default:
		return true, keyLayoutErr(p, sf.Name, "%s cannot be a key component: a key holds strings, integers and time.Time", t)
	}
	l := p.layout(which == "pk")
	l.parts = append(l.parts, part)
	return true, nil
}

func isIntKind(k reflect.Kind) bool {
	return (k >= reflect.Int && k <= reflect.Int64) || (k >= reflect.Uint && k <= reflect.Uint64)
}

// finishKeys orders each key's components and checks the order has no gap
// and no duplicate, and that a raw component comes last.
func (p *plan) finishKeys() error {
	for _, l := range []*keyLayout{p.pk, p.rk} {
		if l == nil {
			continue
		}
		short := "pk"
		if l.which == "RowKey" {
			short = "rk"
		}
		if len(l.parts) == 0 {
			continue // only a fixed prefix: checked per write like any key
		}
		byPos := make([]*keyPart, len(l.parts))
		for i := range l.parts {
			kp := &l.parts[i]
			if kp.pos > len(l.parts) {
				return keyLayoutErr(p, kp.goName, "%s:%d, but %s has %d components: positions are 1 to %d without gaps", short, kp.pos, l.which, len(l.parts), len(l.parts))
			}
			if prev := byPos[kp.pos-1]; prev != nil {
				return keyLayoutErr(p, kp.goName, "%s:%d is also %s's position", short, kp.pos, prev.goName)
			}
			byPos[kp.pos-1] = kp
		}
		sorted := make([]keyPart, len(l.parts))
		for i, kp := range byPos {
			sorted[i] = *kp
		}
		if len(sorted) == 1 && sorted[0].enc == encTuple && !sorted[0].tuple {
			// A key of one string is the string ("Sales", not "Sales!"),
			// unless the tuple encoding is asked for by name.
			sorted[0].enc = encRaw
		}
		if len(sorted) == 1 && sorted[0].enc != encTuple && sorted[0].enc != encRaw {
			sorted[0].bare = true
		}
		for i, kp := range sorted {
			if kp.enc == encRaw && i != len(sorted)-1 {
				return keyLayoutErr(p, kp.goName, "a raw component has no delimiter, so it must be the last of %s", l.which)
			}
		}
		l.parts = sorted
	}
	return nil
}

// hasKeyLayout reports whether the type declares a key composition.
func (p *plan) hasKeyLayout() bool { return p.pk != nil || p.rk != nil }

// keyParts is the number of key components the type declares.
func (p *plan) keyParts() int {
	n := 0
	for _, l := range []*keyLayout{p.pk, p.rk} {
		if l != nil {
			n += len(l.parts)
		}
	}
	return n
}

// compose builds the key from rv's first n components.
func (l *keyLayout) compose(op, typ string, rv reflect.Value, n int) (string, error) {
	b := make([]byte, 0, len(l.prefix)+24*n)
	b = append(b, l.prefix...)
	for i := range l.parts[:n] {
		kp := &l.parts[i]
		var err error
		if b, err = kp.appendKey(b, fieldByIndex(rv, kp.index)); err != nil {
			var ve *keys.ValidationError
			if errors.As(err, &ve) {
				return "", &InputError{Op: op, Type: typ, Field: kp.goName, Rule: ve, Detail: "composing " + l.which}
			}
			return "", inputErr(op, typ, kp.goName, ErrValueOutOfRange, "composing %s: %v", l.which, err)
		}
		if kp.bare {
			b = b[:len(b)-1] // no component follows: no terminator
		}
	}
	return string(b), nil
}

func (kp *keyPart) appendKey(b []byte, fv reflect.Value) ([]byte, error) {
	var u uint64
	neg := false
	if isIntKind(fv.Kind()) {
		if kp.signed {
			n := fv.Int()
			neg, u = n < 0, uint64(n)
		} else {
			u = fv.Uint()
		}
	}
	switch kp.enc {
	case encTuple:
		s, err := keys.EncodeTuple(fv.String())
		return append(b, s...), err
	case encRaw:
		return append(b, fv.String()...), nil
	case encInt:
		if kp.signed {
			b = append(b, keys.Int64(fv.Int())...)
		} else {
			b = append(b, keyrules.Uint64(u)...)
		}
	case encDesc:
		if kp.signed {
			b = append(b, keyrules.DescInt64(fv.Int())...)
		} else {
			b = append(b, keyrules.DescUint64(u)...)
		}
	case encFixed, encDescFix:
		if neg {
			return b, errors.New(strconv.FormatInt(fv.Int(), 10) + " is negative; pad:N holds 0 and up (pad alone holds negatives)")
		}
		if kp.enc == encDescFix {
			limit := pow10(kp.width) - 1
			if u > limit {
				return b, errors.New(strconv.FormatUint(u, 10) + " does not fit in " + strconv.Itoa(kp.width) + " digits")
			}
			u = limit - u
		}
		s, err := keys.FixedUint(u, kp.width)
		if err != nil {
			return b, err
		}
		b = append(b, s...)
	case encTicks, encInvTicks:
		t := fv.Interface().(time.Time)
		if err := keyrules.CheckTicksRange(t); err != nil {
			return b, err
		}
		if kp.enc == encTicks {
			b = append(b, keys.Ticks(t)...)
		} else {
			b = append(b, keys.InvertedTicks(t)...)
		}
	}
	return append(b, keyTerm), nil
}

// plainTuple reports whether text is a tuple component whose every byte
// encodes itself (keys.EncodeTuple's one-character tokens), the common
// case, which then needs no decoding.
func plainTuple(text string) bool {
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c <= 0x23 || c >= 0x7E, c == '&', c == '\'', c == '.', c == '/', c == '>', c == '?', c == '[', c == '\\':
			return false
		}
	}
	return true
}

func pow10(n int) uint64 {
	u := uint64(1)
	for range n {
		u *= 10
	}
	return u
}

// parse fills rv's component fields from key.
func (l *keyLayout) parse(key string, rv reflect.Value) error {
	rest, ok := strings.CutPrefix(key, l.prefix)
	if !ok {
		return errors.New("does not start with the prefix " + strconv.Quote(l.prefix))
	}
	for i := range l.parts {
		kp := &l.parts[i]
		var text string
		if kp.enc == encRaw || kp.bare {
			text, rest = rest, ""
		} else {
			j := strings.IndexByte(rest, keyTerm)
			if j < 0 {
				return errors.New("component " + kp.goName + " is missing")
			}
			text, rest = rest[:j], rest[j+1:]
		}
		if err := kp.parseInto(text, fieldByIndex(rv, kp.index)); err != nil {
			return errors.New("component " + kp.goName + ": " + err.Error())
		}
	}
	if rest != "" {
		return errors.New("text after the last component: " + strconv.Quote(rest))
	}
	return nil
}

func (kp *keyPart) parseInto(text string, fv reflect.Value) error {
	switch kp.enc {
	case encTuple:
		if plainTuple(text) {
			fv.SetString(text) // every byte stands for itself
			return nil
		}
		c, err := keys.DecodeTuple(text + string(keyTerm))
		if err != nil {
			return err
		}
		fv.SetString(c[0])
	case encRaw:
		fv.SetString(text)
	case encTicks, encInvTicks:
		parse := keys.ParseTicks
		if kp.enc == encInvTicks {
			parse = keys.ParseInvertedTicks
		}
		t, err := parse(text)
		if err != nil {
			return err
		}
		fv.Set(reflect.ValueOf(t))
	default:
		var (
			n   int64
			u   uint64
			err error
		)
		switch {
		case kp.enc == encInt && kp.signed:
			n, err = keys.ParseInt64(text)
		case kp.enc == encInt:
			u, err = keyrules.ParseUint64(text)
		case kp.enc == encDesc && kp.signed:
			n, err = keyrules.ParseDescInt64(text)
		case kp.enc == encDesc:
			u, err = keyrules.ParseDescUint64(text)
		default: // encFixed, encDescFix
			u, err = keys.ParseFixedUint(text, kp.width)
			if err == nil && kp.enc == encDescFix {
				u = pow10(kp.width) - 1 - u
			}
			if kp.signed {
				if u > 1<<63-1 {
					return errors.New("out of range")
				}
				n = int64(u)
			}
		}
		if err != nil {
			return err
		}
		if kp.signed {
			if fv.OverflowInt(n) {
				return errors.New(strconv.FormatInt(n, 10) + " overflows " + fv.Type().String())
			}
			fv.SetInt(n)
		} else {
			if fv.OverflowUint(u) {
				return errors.New(strconv.FormatUint(u, 10) + " overflows " + fv.Type().String())
			}
			fv.SetUint(u)
		}
	}
	return nil
}

// composeKeys writes the declared keys of rv into its Meta, refusing a key
// Meta holds that differs from the composed one (ErrKeyMismatch), and checks
// them as the service does. A type without a key layout is left alone.
func (p *plan) composeKeys(op string, rv reflect.Value) error {
	if !p.hasKeyLayout() {
		return nil
	}
	meta := rv.FieldByIndex(p.meta).Addr().Interface().(*Meta)
	typ := p.typ.String()
	pk, rk, err := p.keysOf(op, rv, meta)
	if err != nil {
		return err
	}
	for _, k := range []struct {
		which          string
		have, composed string
		dst            *string
	}{{"PartitionKey", meta.PartitionKey, pk, &meta.PartitionKey}, {"RowKey", meta.RowKey, rk, &meta.RowKey}} {
		if k.have != "" && k.have != k.composed {
			return inputErr(op, typ, k.which, ErrKeyMismatch, "Meta holds %q, the fields compose %q; clear Meta's keys to write a new entity", k.have, k.composed)
		}
	}
	if err := validateKeys(op, typ, pk, rk); err != nil {
		return err
	}
	meta.PartitionKey, meta.RowKey = pk, rk
	return nil
}

// keysOf composes rv's keys without changing it: a key the type does not
// declare is Meta's.
func (p *plan) keysOf(op string, rv reflect.Value, meta *Meta) (pk, rk string, err error) {
	typ := p.typ.String()
	pk, rk = meta.PartitionKey, meta.RowKey
	if p.pk != nil {
		if pk, err = p.pk.compose(op, typ, rv, len(p.pk.parts)); err != nil {
			return "", "", err
		}
	}
	if p.rk != nil {
		if rk, err = p.rk.compose(op, typ, rv, len(p.rk.parts)); err != nil {
			return "", "", err
		}
	}
	return pk, rk, nil
}

// fillKeyFields sets rv's component fields from the keys in its Meta.
func (p *plan) fillKeyFields(rv reflect.Value, meta *Meta) error {
	for _, k := range []struct {
		l   *keyLayout
		key string
	}{{p.pk, meta.PartitionKey}, {p.rk, meta.RowKey}} {
		if k.l == nil {
			continue
		}
		if err := k.l.parse(k.key, rv); err != nil {
			return inputErr("decode", p.typ.String(), k.l.which, ErrInvalidValue, "%q is not this type's composite key: %v", k.key, err)
		}
	}
	return nil
}

// KeysOf returns the PartitionKey and RowKey that v's key fields compose
// (see "Declarative keys" in the package documentation), for Get,
// Delete or a point filter; a key T does not declare is v's Meta's. v is
// not changed. The keys are checked as the service checks them.
func KeysOf[T any](v *T) (partitionKey, rowKey string, err error) {
	p, err := cachedPlan(reflect.TypeFor[T]())
	if err != nil {
		return "", "", err
	}
	if v == nil {
		return "", "", inputErr("KeysOf", p.typ.String(), "", ErrNilValue, "")
	}
	if p.meta == nil {
		return "", "", inputErr("KeysOf", p.typ.String(), "", ErrNoMeta, "embed table.Meta to carry PartitionKey and RowKey")
	}
	rv := reflect.ValueOf(v).Elem()
	meta := rv.FieldByIndex(p.meta).Addr().Interface().(*Meta)
	pk, rk, err := p.keysOf("KeysOf", rv, meta)
	if err != nil {
		return "", "", err
	}
	if err := validateKeys("KeysOf", p.typ.String(), pk, rk); err != nil {
		return "", "", err
	}
	return pk, rk, nil
}

// KeyRange returns the range query of the entities of type T in v's
// partition whose RowKey starts with v's first n RowKey components (and
// T's RowKey prefix, if it declares one): with n = 0 every entity of the
// type in the partition, with n equal to the number of RowKey components
// the one entity v names (a point query). For
//
//	type Order struct {
//		table.Meta `table:",rkprefix:order_"`
//		Customer string `table:"Customer,pk"`
//		Year     int    `table:"Year,rk:1,pad:4"`
//		ID       string `table:"ID,rk:2"`
//	}
//
// KeyRange(&Order{Customer: "C042", Year: 2026}, 1) is "all orders of
// customer C042 in 2026": PartitionKey eq 'C042' and RowKey ge
// 'order_2026!' and RowKey lt 'order_2026"'. The PartitionKey comes from
// all of T's PartitionKey components, or from v's Meta when T declares none.
// The result is an ordinary Filter: it composes with And and Or and counts
// towards MaxFilterComparisons. A type without a RowKey layout, an n out of
// range, or a key the service would refuse is the Filter's error (Err,
// Build), before any request.
func KeyRange[T any](v *T, n int) Filter {
	p, err := cachedPlan(reflect.TypeFor[T]())
	if err != nil {
		return Filter{err: err}
	}
	typ := p.typ.String()
	if v == nil {
		return Filter{err: inputErr("KeyRange", typ, "", ErrNilValue, "")}
	}
	if p.meta == nil {
		return Filter{err: inputErr("KeyRange", typ, "", ErrNoMeta, "embed table.Meta to carry PartitionKey and RowKey")}
	}
	if p.rk == nil {
		return Filter{err: inputErr("KeyRange", typ, "RowKey", ErrKeyLayout, "%s declares no RowKey components (rk:N) or prefix (rkprefix)", typ)}
	}
	if n < 0 || n > len(p.rk.parts) {
		return Filter{err: inputErr("KeyRange", typ, "RowKey", ErrBadOption, "n is 0 to %d, the RowKey's components; got %d", len(p.rk.parts), n)}
	}
	rv := reflect.ValueOf(v).Elem()
	meta := rv.FieldByIndex(p.meta).Addr().Interface().(*Meta)
	pk := meta.PartitionKey
	if p.pk != nil {
		if pk, err = p.pk.compose("KeyRange", typ, rv, len(p.pk.parts)); err != nil {
			return Filter{err: err}
		}
	}
	prefix, err := p.rk.compose("KeyRange", typ, rv, n)
	if err != nil {
		return Filter{err: err}
	}
	if err := checkEntityKeys("KeyRange", typ, pk, prefix); err != nil {
		return Filter{err: err}
	}
	switch {
	case n == len(p.rk.parts) && n > 0:
		return Partition(pk).And(Prop("RowKey").Eq(prefix))
	case prefix == "":
		return Partition(pk)
	}
	return RowPrefix(pk, prefix)
}
