package table

import (
	"context"
	"fmt"
	"iter"
	"reflect"
	"strconv"
	"time"
	"unsafe"
)

// Field is a typed reference to one property of T, made by FieldOf: its
// comparisons take a V, so a renamed field or a value of the wrong type is
// a compile-time error, and the property name is the one the codec stores
// the field under (`table:"Name"` renames included). A Field that could
// not be resolved carries its error into every Filter it makes.
type Field[V any] struct {
	name string
	kind fieldKind
	err  error
}

// FieldOf resolves the field of T whose address sel returns, as in
//
//	amount := table.FieldOf(func(o *Order) *float64 { return &o.Amount })
//	f := amount.Gt(100) // Amount gt 100.0
//
// sel is called once, on a zero T; the field is found by its offset in T
// and its type V, in T's cached plan. Meta's PartitionKey, RowKey and
// Timestamp resolve too. A field the codec does not store as a property is
// an error carried by the Field (ErrBadFilter): a skipped (`table:"-"`) or
// unexported field, a JSON field (stored as text, no order), an encrypted one (the service
// holds ciphertext), or an address outside T.
func FieldOf[T, V any](sel func(*T) *V) Field[V] {
	t := reflect.TypeFor[T]()
	p, err := cachedPlan(t)
	if err != nil {
		return Field[V]{err: err}
	}
	bad := func(format string, args ...any) Field[V] {
		return Field[V]{err: inputErr("FieldOf", t.String(), "", ErrBadFilter, format, args...)}
	}
	if p.raw {
		return bad("an Entity has no fields; use Prop")
	}
	v := new(T)
	ptr, perr := callSelector(sel, v)
	if perr != nil {
		return bad("the selector panicked: %v", perr)
	}
	base, addr := uintptr(unsafe.Pointer(v)), uintptr(unsafe.Pointer(ptr))
	if ptr == nil || addr < base || addr >= base+t.Size() {
		return bad("the selector must return the address of a field of its argument")
	}
	off, vt := addr-base, reflect.TypeFor[V]()
	if p.meta != nil {
		if mo, _ := offsetOf(t, p.meta); off >= mo && off < mo+metaType.Size() {
			for i := range metaType.NumField() {
				sf := metaType.Field(i)
				k := kString
				switch sf.Name {
				case "PartitionKey", "RowKey":
				case "Timestamp":
					k = kTime
				default:
					continue // the ETag is no property
				}
				if mo+sf.Offset == off && sf.Type == vt {
					return Field[V]{name: sf.Name, kind: k}
				}
			}
			return bad("Meta's %s fields are PartitionKey, RowKey (string) and Timestamp (time.Time)", vt)
		}
	}
	for i := range p.fields {
		f := &p.fields[i]
		o, ft := offsetOf(t, f.index)
		if o != off || ft != vt {
			continue
		}
		for _, e := range p.encrypted {
			if e == f.name {
				return bad("%s is encrypted: the service holds ciphertext, which no filter matches", f.name)
			}
		}
		if f.kind == kJSON {
			return bad("%s is stored as JSON text, which filters cannot compare as its Go type", f.name)
		}
		return Field[V]{name: f.name, kind: f.kind}
	}
	return bad("no stored property of %s is a %s at that address (skipped, unexported, or not a field)", t, vt)
}

func callSelector[T, V any](sel func(*T) *V, v *T) (ptr *V, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return sel(v), nil
}

// offsetOf is the offset of the field at index within t, and its type.
func offsetOf(t reflect.Type, index []int) (uintptr, reflect.Type) {
	var off uintptr
	for _, i := range index {
		sf := t.Field(i)
		off += sf.Offset
		t = sf.Type
	}
	return off, t
}

// Name is the property the field is stored under ("" when f has an error).
func (f Field[V]) Name() string { return f.name }

// Err is the error that resolving the field met, or nil.
func (f Field[V]) Err() error { return f.err }

// Prop is the field as an untyped Prop.
func (f Field[V]) Prop() Prop { return Prop(f.name) }

// Eq is "equal to v", typed as the codec stores the field (see Prop.Eq).
func (f Field[V]) Eq(v V) Filter { return f.cmp("eq", v) }

// Ne is "not equal to v".
func (f Field[V]) Ne(v V) Filter { return f.cmp("ne", v) }

// Gt is "greater than v".
func (f Field[V]) Gt(v V) Filter { return f.cmp("gt", v) }

// Ge is "greater than or equal to v".
func (f Field[V]) Ge(v V) Filter { return f.cmp("ge", v) }

// Lt is "less than v".
func (f Field[V]) Lt(v V) Filter { return f.cmp("lt", v) }

// Le is "less than or equal to v".
func (f Field[V]) Le(v V) Filter { return f.cmp("le", v) }

func (f Field[V]) cmp(op string, v V) Filter {
	if f.err != nil {
		return Filter{err: f.err}
	}
	lit, err := typedLiteral(f.kind, reflect.ValueOf(&v).Elem())
	if err != nil {
		return Filter{err: inputErr("filter", "", f.name, ErrBadFilter, "%v", err)}
	}
	return Filter{n: &fnode{op: op, prop: f.name, lit: lit}}
}

// typedLiteral is the literal of rv stored as kind: the EDM type comes from
// the field, so a named type (type Status string) or a uint16 is typed as
// the codec writes it.
func typedLiteral(kind fieldKind, rv reflect.Value) (string, error) {
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return "", literalErr("nil literal: the service stores no nulls")
		}
		rv = rv.Elem()
	}
	switch kind {
	case kString:
		return literal(rv.String())
	case kText:
		raw, err := rv.Interface().(interface{ MarshalText() ([]byte, error) }).MarshalText()
		if err != nil {
			return "", err
		}
		return literal(string(raw))
	case kBool:
		return literal(rv.Bool())
	case kInt32, kInt64:
		var s string
		if rv.CanInt() {
			s = strconv.FormatInt(rv.Int(), 10)
		} else {
			s = strconv.FormatUint(rv.Uint(), 10)
		}
		if kind == kInt64 {
			s += "L"
		}
		return s, nil
	case kDouble:
		bits := 64
		if rv.Kind() == reflect.Float32 {
			bits = 32
		}
		return doubleLiteral(rv.Float(), bits)
	case kTime:
		return literal(rv.Interface().(time.Time))
	case kGUID:
		return literal(rv.Interface().(GUID))
	case kBinary:
		return literal(rv.Bytes())
	}
	return "", literalErr("no literal for this field")
}

func projectionPlan[P any]() (*plan, error) {
	p, err := cachedPlan(reflect.TypeFor[P]())
	if err != nil {
		return nil, err
	}
	if p.raw || p.meta == nil {
		return nil, inputErr("QueryAs", p.typ.String(), "", ErrNoMeta, "a projection is a struct that embeds table.Meta and names its properties")
	}
	return p, nil
}

func (p *plan) selectList() []string {
	out := make([]string, len(p.fields))
	for i, f := range p.fields {
		out[i] = f.name
	}
	return out
}

// checkProjection reports a field of the projection pp that the stored
// type sp cannot hold: a name sp does not store (unless sp keeps unknown
// properties in Extra, or is Entity), or one it stores as another type.
func checkProjection(pp, sp *plan) error {
	if sp.raw {
		return nil
	}
	for _, f := range pp.fields {
		i, ok := sp.byName[f.name]
		if !ok {
			if sp.extra != nil {
				continue
			}
			return inputErr("QueryAs", pp.typ.String(), f.name, ErrBadOption, "%s stores no property %s", sp.typ, f.name)
		}
		if sf := sp.fields[i]; sf.edm != f.edm || (sf.kind == kJSON) != (f.kind == kJSON) {
			return inputErr("QueryAs", pp.typ.String(), f.name, ErrBadOption, "%s stores %s as %s, the projection reads it as %s", sp.typ, f.name, sf.edm, f.edm)
		}
	}
	return nil
}

// projection checks P against t's type and returns P's plan and opts with
// the $select derived from P.
func projection[P, T any](t *Table[T], opts *QueryOptions) (*plan, *QueryOptions, error) {
	pp, err := projectionPlan[P]()
	if err != nil {
		return nil, nil, err
	}
	if err := checkProjection(pp, t.plan); err != nil {
		return nil, nil, err
	}
	o := QueryOptions{}
	if opts != nil {
		o = *opts
	}
	if len(o.Select) > 0 {
		return nil, nil, inputErr("QueryAs", pp.typ.String(), "Select", ErrBadOption, "QueryAs derives $select from %s; leave Select empty", pp.typ)
	}
	o.Select = pp.selectList()
	if len(o.Select) == 0 {
		// Only Meta (and key fields): the keys are all that is read.
		o.Select = []string{"PartitionKey"}
	}
	return pp, &o, nil
}

// projectionDecoder decodes a query's entities into new P values, through
// t's decryption when T has encrypted fields.
func projectionDecoder[P, T any](ctx context.Context, t *Table[T], pp *plan) func([]byte, bool) (*P, error) {
	return func(data []byte, _ bool) (*P, error) {
		if t.enc != nil {
			plain, err := t.decrypt(ctx, data, false)
			if err != nil {
				return nil, err
			}
			data = plain
		}
		v := new(P)
		rv := reflect.ValueOf(v).Elem()
		if err := pp.decode(data, rv); err != nil {
			return nil, err
		}
		rv.FieldByIndex(pp.meta).Addr().Interface().(*Meta).readVia(t.client)
		return v, nil
	}
}

// QueryAs is t.Query reading only the properties of the projection type P
// (a struct that embeds Meta): $select is derived from P's fields, so the
// service sends, and the codec decodes, nothing else. P's fields must be
// properties that T stores with the same EDM type (ErrBadOption before
// any request), unless T keeps unknown properties in an Extra field or is
// Entity; opts.Select must be empty. Filter, Top, continuation and the
// wire path (ClientOptions) are those of Query.
func QueryAs[P, T any](ctx context.Context, t *Table[T], opts *QueryOptions) iter.Seq2[*P, error] {
	pp, o, err := projection[P](t, opts)
	if err != nil {
		return func(yield func(*P, error) bool) { yield(nil, err) }
	}
	return queryOf(ctx, t, o, projectionDecoder[P](ctx, t, pp))
}
