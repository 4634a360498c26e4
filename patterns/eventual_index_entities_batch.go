package patterns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/idlist"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/table"
)

// maxValuesPerRead keeps a read of several values' index entities within
// the service's 15 comparisons per filter: "PartitionKey eq", and a
// RowKey range (two comparisons) per value.
const maxValuesPerRead = 7

// idChange is what a batch does to one value's list.
type idChange struct{ add, remove []string }

// applyListChanges makes changes (by value) to list. together is for a
// batched handler, the only writer of its lists while it runs: with
// RemoteIndexEntities every list the changes touch is then read with one
// query per maxValuesPerRead values and written in the fewest entity group
// transactions (applyChanges), which a concurrent writer of any of those
// lists makes read and write them all again. Otherwise (handlers running
// side by side on a Worker) each value is changed on its own, its new IDs
// in one change where the list allows it, so a lost race costs that
// value's read and write alone. fail is called for each value whose
// change failed: every value when a shared write failed. Each change is
// idempotent.
func applyListChanges(ctx context.Context, list idList, changes map[string]*idChange, together bool, fail func(value string, err error)) {
	if len(changes) == 0 {
		return
	}
	if r, ok := list.(*remoteIndexEntities); ok && together {
		if err := r.applyChanges(ctx, changes); err != nil {
			for value := range changes {
				fail(value, err)
			}
		}
		return
	}
	many, _ := list.(interface {
		addIDs(context.Context, string, []string) error
	})
	for _, value := range slices.Sorted(mapKeys(changes)) {
		c := changes[value]
		if many != nil && len(c.add) > 1 {
			if err := many.addIDs(ctx, value, c.add); err != nil {
				fail(value, err)
			}
		} else {
			for _, id := range c.add {
				if err := list.Add(ctx, opModelProcess, value, id); err != nil {
					fail(value, err)
				}
			}
		}
		for _, id := range c.remove {
			if err := list.Remove(ctx, opModelProcess, value, id); err != nil {
				fail(value, err)
			}
		}
	}
}

// applyChanges makes every list of changes as many Adds and Removes
// would: the lists read with one query per maxValuesPerRead values, and
// written in the fewest transactions, each index entity guarded by the
// ETag it was read at; a lost race reads and applies again.
func (r *remoteIndexEntities) applyChanges(ctx context.Context, changes map[string]*idChange) error {
	values := slices.Sorted(mapKeys(changes))
	prefixes := make([]string, len(values))
	for i, value := range values {
		for _, id := range changes[value].add {
			if err := idlist.CheckID(id); err != nil {
				return &table.InputError{Op: opModelProcess, Field: "id", Rule: err}
			}
		}
		p, err := r.x.valuePrefix(value)
		if err != nil {
			return &table.InputError{Op: opModelProcess, Field: "value", Rule: err}
		}
		prefixes[i] = p
	}
	_, err := table.RetryOnConflict(ctx, func(int) error {
		parts := map[string][]indexPart{}
		for start := 0; start < len(values); start += maxValuesPerRead {
			chunk := make([]int, 0, maxValuesPerRead)
			for i := start; i < min(start+maxValuesPerRead, len(values)); i++ {
				chunk = append(chunk, i)
			}
			ranges := make([]table.Filter, len(chunk))
			for j, i := range chunk {
				lo, hi := keyrules.PrefixRange(prefixes[i])
				ranges[j] = table.Prop("RowKey").Ge(lo).And(table.Prop("RowKey").Lt(hi))
			}
			for ent, err := range r.x.raw.Query(ctx, &table.QueryOptions{Filter: table.Prop("PartitionKey").Eq(r.partition).And(table.Or(ranges...))}) {
				if err != nil {
					return err
				}
				part, err := decodePart(ent)
				if err != nil {
					return err
				}
				for _, i := range chunk {
					if strings.HasPrefix(ent.RowKey, prefixes[i]) {
						parts[values[i]] = append(parts[values[i]], part)
					}
				}
			}
		}
		var ops []batch.Op
		for _, value := range values {
			o, err := r.x.rewriteIDs(r.partition, value, changes[value].add, changes[value].remove, parts[value])
			if err != nil {
				return err
			}
			ops = append(ops, o...)
		}
		if len(ops) == 0 {
			return nil
		}
		return submitListOps(ctx, r.client, ops)
	}, &r.retry)
	return err
}

// rewriteIDs returns the operations that take remove out of value's list
// and put add into it, as they stand after parts (in part order): a part
// that loses IDs is rewritten, or deleted when it is left empty; new IDs
// fill the last part as far as it holds, then new parts. Each part is
// changed once (its last state), guarded by the ETag it was read at. IDs
// already listed are not added again.
func (x *indexEntities[T]) rewriteIDs(pk, value string, add, remove []string, parts []indexPart) ([]batch.Op, error) {
	type state struct {
		indexPart
		existed, changed, grew bool
	}
	var ps []*state
	for _, p := range parts {
		kept := make([]string, 0, len(p.ids))
		for _, id := range p.ids {
			if !slices.Contains(remove, id) {
				kept = append(kept, id)
			}
		}
		ps = append(ps, &state{indexPart: indexPart{rowKey: p.rowKey, ids: kept, etag: p.etag}, existed: true, changed: len(kept) != len(p.ids)})
	}
	listed := func(id string) bool {
		for _, p := range ps {
			if slices.Contains(p.ids, id) {
				return true
			}
		}
		return false
	}
	for _, id := range add {
		if listed(id) {
			continue
		}
		if n := len(ps); n > 0 {
			last := ps[n-1]
			_, err := x.encodePart(pk, last.rowKey, value, append(slices.Clone(last.ids), id), x.max)
			if err == nil {
				last.ids, last.changed, last.grew = append(last.ids, id), true, true
				continue
			}
			if !errors.Is(err, errPartFull) {
				return nil, err
			}
		}
		n := 0
		if len(ps) > 0 {
			k, err := partNumber(ps[len(ps)-1].rowKey)
			if err != nil {
				return nil, err
			}
			n = k + 1
		}
		rk, err := x.partKey(value, n)
		if err != nil {
			return nil, err
		}
		ps = append(ps, &state{indexPart: indexPart{rowKey: rk, ids: []string{id}}, changed: true, grew: true})
	}
	var ops []batch.Op
	for _, p := range ps {
		switch {
		case !p.changed:
			continue
		case len(p.ids) == 0:
			if p.existed {
				ops = append(ops, batch.Delete(pk, p.rowKey).IfMatch(p.etag))
			}
			continue
		}
		// A part that only shrank is written even if it holds more than
		// this index's MaxListUnits (another writer's setting); only what
		// one entity holds at all bounds it.
		limit := maxListUnits
		if p.grew {
			limit = x.max
		}
		ent, err := x.encodePart(pk, p.rowKey, value, p.ids, limit)
		if errors.Is(err, errPartFull) {
			return nil, fmt.Errorf("patterns: the ID %q alone outgrows an index entity", p.ids[0])
		}
		if err != nil {
			return nil, err
		}
		if p.existed {
			ent.ETag = p.etag
			ops = append(ops, batch.Update(ent, aztables.UpdateModeReplace))
		} else {
			ops = append(ops, batch.Add(ent))
		}
	}
	return ops, nil
}
