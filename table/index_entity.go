package table

import (
	"context"
	"reflect"
	"slices"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// The two encodings the index patterns and the entity model need from a
// Table, so that a type with encrypted fields can be indexed on its clear
// ones: an index row lives under keys of its own, and a sealed value is
// bound to the keys it was sealed under (see Encryption), so it cannot be
// copied there.

// encodeWrite returns the body a write of v sends, as t's own Add, Update
// and Upsert send it: declared keys composed into v's Meta, every limit
// checked, and the encrypted fields sealed under v's keys. A Merge body is
// refused for a type with encrypted fields (ErrMergeEncrypted), as Update
// and Upsert refuse it. Use it to put a typed value into a transaction
// (internal/batchraw) with t's encryption. mode is the mode of the write
// the body is for.
func (t *Table[T]) encodeWrite(ctx context.Context, v *T, mode aztables.UpdateMode) ([]byte, error) {
	wire, _, err := t.encodeFor(ctx, "EncodeWrite", v, mode)
	return wire, err
}

// clearEntity returns v as an Entity of its clear properties: every
// property v is stored with except the encrypted ones, with v's Meta
// (declared keys composed). It is what an index copy of v may hold; for a
// type without encrypted fields it equals ToEntity.
func (t *Table[T]) clearEntity(v *T) (*Entity, error) {
	if !t.plan.hasEncrypted() {
		return t.ToEntity(v)
	}
	if v == nil {
		return nil, inputErr("ClearEntity", t.plan.typ.String(), "", ErrNilValue, "")
	}
	rv := reflect.ValueOf(v).Elem()
	if err := t.plan.composeKeys("ClearEntity", rv); err != nil {
		return nil, err
	}
	only := map[string]bool{}
	for _, name := range t.properties() {
		if !slices.Contains(t.plan.encrypted, name) {
			only[name] = true
		}
	}
	body, err := t.plan.encode(nil, rv, only)
	if err != nil {
		return nil, err
	}
	e := new(Entity)
	if err := decodeEntity(body, e); err != nil {
		return nil, err
	}
	e.Meta = *t.Meta(v)
	return e, nil
}

// encryptedProperties lists the properties of T stored sealed (tagged
// `table:",encrypt"`); nil when there are none.
func (t *Table[T]) encryptedProperties() []string { return slices.Clone(t.plan.encrypted) }

// fromClearEntity decodes an Entity of clear properties, as clearEntity
// makes, into a new T whose encrypted fields are left zero. An Entity
// that carries one of T's encrypted properties is refused: a sealed value
// is read only through the Table's own reads, which open it. The value is
// partial, and the Table's writes refuse it (ErrPartialValue), when T has
// encrypted fields or e lacks a property that every write of T stores (a
// projection): it would store zeros over what e lacks.
func (t *Table[T]) fromClearEntity(e *Entity) (*T, error) {
	var v *T
	var err error
	if !t.plan.hasEncrypted() {
		v, err = t.FromEntity(e)
	} else {
		if e == nil {
			return nil, inputErr("FromClearEntity", t.plan.typ.String(), "", ErrNilValue, "")
		}
		for _, name := range t.plan.encrypted {
			if _, ok := e.Properties[name]; ok {
				return nil, inputErr("FromClearEntity", t.plan.typ.String(), name, ErrEncryptedType, "the entity carries a sealed property; read it through the Table")
			}
		}
		v, err = t.fromEntity(e)
	}
	if err != nil {
		return nil, err
	}
	if t.lacks(e) {
		t.Meta(v).partial = true
	}
	return v, nil
}

// lacks reports whether e lacks properties a T stores: T's encrypted ones,
// or a field that every write stores (neither omitempty nor a pointer).
func (t *Table[T]) lacks(e *Entity) bool {
	if t.plan.raw {
		return false
	}
	if t.plan.hasEncrypted() {
		return true
	}
	for _, f := range t.plan.fields {
		if _, ok := e.Properties[f.name]; !ok && !f.omitEmpty && !f.ptr {
			return true
		}
	}
	return false
}

// fromStored decodes an Entity read through the raw view (Entities) as
// t's own reads decode a stored entity: encrypted fields opened and
// checked against the entity's keys, the ETag kept. It is how a scan of
// raw rows (a verify that reads primaries and index rows in one query)
// turns a primary into a T.
func (t *Table[T]) fromStored(ctx context.Context, e *Entity) (*T, error) {
	if e == nil {
		return nil, inputErr("FromStored", t.plan.typ.String(), "", ErrNilValue, "")
	}
	if t.enc == nil {
		return t.FromEntity(e)
	}
	body, err := encodeEntity(nil, e, nil)
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := t.decodeFrom(ctx, body, v, true); err != nil {
		return nil, err
	}
	*t.Meta(v) = e.Meta
	return v, nil
}
