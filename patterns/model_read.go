package patterns

import (
	"context"
	"fmt"
	"github.com/tablekit/tablekit/internal/tableio"
	"iter"

	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// The model's reads through its indexes. A copies index (Copies or
// CrossCopies) is read by Lookup (one value, one primary), Find (every
// primary with a value), Range (values in [lo, hi)) and Prefix (values
// that start with a string); a list index (Lists or RemoteLists) by IDs
// (the owners' keys) and LookupEntities (the owners). Each returns whole
// primaries: read from the copy when it stores every property, else from
// the primary it names. An index name the model does not declare, or one
// of the other kind, is refused before any request (ErrUnknownIndex), and
// so is an index that is not active (ErrIndexNotReady, see IndexState).

// copiesRead is a copies index resolved for a read.
type copiesRead[T any] struct {
	index  string
	intra  bool
	i      int
	rows   *table.Table[table.Entity] // where its copies live
	whole  bool                       // a copy holds every property of T
	unique bool                       // Copies: one owner per value
	prefix string                     // Copies: the RowKey prefix
}

// copiesIndex resolves index as a copies index of m, checking
// partitionKey, before any request.
func (m *Model[T]) copiesIndex(op, index, partitionKey string) (copiesRead[T], error) {
	clear := len(tableio.For(m.tbl).EncryptedProperties()) == 0
	var r copiesRead[T]
	if i, ok := m.copyIndex(index); ok {
		d := m.copies.defs[i]
		r = copiesRead[T]{index: index, intra: true, i: i, rows: m.copies.raw, whole: clear && m.copies.project[i] == nil, unique: d.Unique, prefix: d.Prefix}
	} else if i, ok := m.crossIndex(index); ok {
		r = copiesRead[T]{index: index, i: i, rows: m.cross.copies[i], whole: clear && m.cross.project[i] == nil}
	} else {
		return r, m.unknown(index, "copies")
	}
	if err := keyrules.ValidatePartitionKey(partitionKey); err != nil {
		return r, &table.InputError{Op: op, Field: "PartitionKey", Rule: err}
	}
	return r, nil
}

// unknown is the error for an index that is not of the kind asked for.
func (m *Model[T]) unknown(index, kind string) error {
	declared := ""
	for _, d := range m.listDef {
		if d.Name == index {
			declared = "list"
		}
	}
	for _, d := range m.remote {
		if d.Name == index {
			declared = "list"
		}
	}
	_, intra := m.copyIndex(index)
	_, cross := m.crossIndex(index)
	if intra || cross {
		declared = "copies"
	}
	if declared == "" {
		return fmt.Errorf("%w: model %s declares no index %q", ErrUnknownIndex, m.name, index)
	}
	return fmt.Errorf("%w: %q is a %s index of model %s, not a %s index", ErrUnknownIndex, index, declared, m.name, kind)
}

// scanCopies yields the primary of each copy that f selects, whole: the
// decoded copy when it holds every property, else the primary it names,
// read (one request each), and only while that primary still calls for
// this copy (a copy whose primary is gone or changed since is skipped).
func (m *Model[T]) scanCopies(ctx context.Context, r copiesRead[T], f table.Filter) iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) {
		for c, err := range r.rows.Query(ctx, &table.QueryOptions{Filter: f}) {
			if err != nil {
				yield(nil, err)
				return
			}
			v, err := m.wholeOf(ctx, r, c)
			if err != nil {
				yield(nil, err)
				return
			}
			if v != nil && !yield(v, nil) {
				return
			}
		}
	}
}

// wholeOf is the primary that copy c stands for (nil when c is no longer
// its primary's copy).
func (m *Model[T]) wholeOf(ctx context.Context, r copiesRead[T], c *table.Entity) (*T, error) {
	var v *T
	var err error
	if r.intra {
		v, err = m.copies.decodeCopy(c)
	} else {
		v, err = m.cross.decodeCopy(c)
	}
	if err != nil || r.whole {
		return v, err
	}
	km := m.tbl.Meta(v)
	p, err := m.tbl.Get(ctx, km.PartitionKey, km.RowKey, nil)
	if table.Is(err, table.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !m.owns(r, p, c) {
		return nil, nil
	}
	return p, nil
}

// owns reports whether primary p still calls for copy c in index r.
func (m *Model[T]) owns(r copiesRead[T], p *T, c *table.Entity) bool {
	if r.intra {
		rk, err := m.copies.copyKey("", r.i, p)
		return err == nil && rk == c.RowKey
	}
	addrs, err := m.cross.addrs("", p)
	return err == nil && addrs[r.i].PK == c.PartitionKey && addrs[r.i].RK == c.RowKey
}

// Find returns the primaries whose value in a copies index (Copies: in
// partitionKey; CrossCopies: in the copies' partition partitionKey) is
// value, each whole, in the index's order: one range query a page (a
// unique Copies index: one point read), and a read of each primary whose
// copy lacks properties (encrypted ones, or those its projection leaves
// out).
func (m *Model[T]) Find(ctx context.Context, index, partitionKey, value string, opts *ReadOptions) iter.Seq2[*T, error] {
	return namedSeq(opModelFind, m.find(ctx, index, partitionKey, value))
}

func (m *Model[T]) find(ctx context.Context, index, partitionKey, value string) iter.Seq2[*T, error] {
	r, err := m.copiesIndex(opModelFind, index, partitionKey)
	if err != nil {
		return errSeq[T](err)
	}
	if err := m.readable(ctx, opModelFind, index); err != nil {
		return errSeq[T](err)
	}
	if r.unique {
		rk := r.prefix + value
		if err := keyrules.ValidateRowKey(rk); err != nil {
			return errSeq[T](&table.InputError{Op: opModelFind, Field: "value", Rule: err})
		}
		return func(yield func(*T, error) bool) {
			c, err := r.rows.Get(ctx, partitionKey, rk, nil)
			if table.Is(err, table.ErrNotFound) {
				return
			}
			if err == nil {
				var v *T
				if v, err = m.wholeOf(ctx, r, c); v == nil && err == nil {
					return
				}
				yield(v, err)
				return
			}
			yield(nil, err)
		}
	}
	enc, err := keys.EncodeTuple(value)
	if err != nil {
		return errSeq[T](&table.InputError{Op: opModelFind, Field: "value", Rule: err})
	}
	return m.scanCopies(ctx, r, table.RowPrefix(partitionKey, r.prefix+enc))
}

// Range returns the primaries whose value in a copies index lies in
// [lo, hi) (hi "" for no upper bound), each whole as Find returns them,
// in the index's order (the owners of one value of a CrossCopies index in
// the order of their keys' digests): one range query a page.
func (m *Model[T]) Range(ctx context.Context, index, partitionKey, lo, hi string, opts *ReadOptions) iter.Seq2[*T, error] {
	return namedSeq(opModelRange, m.rangeOf(ctx, index, partitionKey, lo, hi))
}

func (m *Model[T]) rangeOf(ctx context.Context, index, partitionKey, lo, hi string) iter.Seq2[*T, error] {
	r, err := m.copiesIndex(opModelRange, index, partitionKey)
	if err != nil {
		return errSeq[T](err)
	}
	if err := m.readable(ctx, opModelRange, index); err != nil {
		return errSeq[T](err)
	}
	enc := func(s string) string { return r.prefix + tupleComponentPrefix(s) + "!" }
	if r.unique {
		enc = func(s string) string { return r.prefix + s }
	} else if !r.intra {
		enc = func(s string) string { return tupleComponentPrefix(s) }
	}
	upper := ""
	if r.intra {
		_, upper = keyrules.PrefixRange(r.prefix)
	}
	if hi != "" {
		upper = enc(hi)
	}
	return m.scanCopies(ctx, r, table.RowRange(partitionKey, enc(lo), upper))
}

// Prefix returns the primaries whose value in a copies index starts with
// prefix, each whole as Find returns them, in the index's order: one
// range query a page.
func (m *Model[T]) Prefix(ctx context.Context, index, partitionKey, prefix string, opts *ReadOptions) iter.Seq2[*T, error] {
	return namedSeq(opModelPrefix, m.prefixOf(ctx, index, partitionKey, prefix))
}

func (m *Model[T]) prefixOf(ctx context.Context, index, partitionKey, prefix string) iter.Seq2[*T, error] {
	r, err := m.copiesIndex(opModelPrefix, index, partitionKey)
	if err != nil {
		return errSeq[T](err)
	}
	if err := m.readable(ctx, opModelPrefix, index); err != nil {
		return errSeq[T](err)
	}
	p := r.prefix + tupleComponentPrefix(prefix)
	if r.unique {
		p = r.prefix + prefix
	}
	return m.scanCopies(ctx, r, table.RowPrefix(partitionKey, p))
}

// IDs returns the keys of the primaries that a list index (Lists: in
// partitionKey; RemoteLists: partitionKey is ignored) holds for value, in
// the list's order, without reading the primaries: one read of the list.
// An index that is no list index is refused before any request.
func (m *Model[T]) IDs(ctx context.Context, index, partitionKey, value string, opts *ReadOptions) (_ []Owner, err error) {
	ctx, done := m.enter(ctx, opModelIDs, partitionKey)
	defer done(&err)
	if err := m.readable(ctx, opModelIDs, index); err != nil {
		return nil, err
	}
	for i, d := range m.listDef {
		if d.Name != index {
			continue
		}
		rks, err := m.lists[i].lookup(ctx, opModelIDs, partitionKey, value)
		if err != nil {
			return nil, err
		}
		out := make([]Owner, len(rks))
		for j, rk := range rks {
			out[j] = Owner{PartitionKey: partitionKey, RowKey: rk}
		}
		return out, nil
	}
	for i, d := range m.remote {
		if d.Name != index {
			continue
		}
		ids, err := m.remoteList[i].IDs(ctx, opModelIDs, value)
		if err != nil {
			return nil, err
		}
		out := make([]Owner, 0, len(ids))
		for _, id := range ids {
			pk, rk, ok := ownerKeys(id)
			if !ok {
				return nil, fmt.Errorf("patterns: Model.IDs: the list of %q holds %q, which is no ID", value, id)
			}
			out = append(out, Owner{PartitionKey: pk, RowKey: rk})
		}
		return out, nil
	}
	return nil, m.unknown(index, "list")
}
