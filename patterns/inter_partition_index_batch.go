package patterns

import (
	"context"
	"slices"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/table"
)

// A batched handler's reads: at most maxRowKeysPerRead RowKeys in one
// query, so that a filter stays within the service's 15 comparisons
// ("PartitionKey eq" and 14 "RowKey eq"), and at most batchReadsInFlight
// queries at a time.
const (
	maxRowKeysPerRead  = 14
	batchReadsInFlight = 8
)

// applyCopies makes the copies match the primaries found (their current
// state, by keys; a key missing from found has no primary) for the live
// bodies, and sets errs[i] for each body i whose work failed; readErrs
// holds the primaries' partitions whose read failed. Every copy the
// primaries call for is written whole (Replace) and every stale copy
// still owned by the primary that had it is deleted, guarded by the ETag
// it was read at, the copies of one index partition together in entity
// group transactions. A stale copy that another primary of the batch now
// calls for is overwritten instead of deleted. When a transaction is
// refused (a copy changed since it was read), the bodies behind it are
// applied one by one as Handle does.
func (x *interPartitionIndex[T]) applyCopies(ctx context.Context, bodies []indexMessage, live []bool, found map[[2]string]*T, readErrs map[string]error, errs []error) {
	// What the current primaries call for, and which messages stand behind
	// each index partition's work.
	type group struct {
		index int
		pk    string
	}
	wantAt := map[copyAddr]*table.Entity{}
	var wantOrder []copyAddr
	behind := map[group][]int{}
	wants := make([][]copyAddr, len(bodies))
	for i := range bodies {
		if !live[i] {
			continue
		}
		b := bodies[i]
		if err := readErrs[b.PK]; err != nil {
			errs[i], live[i] = err, false
			continue
		}
		v := found[[2]string{b.PK, b.RK}]
		wanted, err := x.wanted(v)
		if err != nil {
			errs[i], live[i] = err, false
			continue
		}
		for _, c := range wanted {
			a := copyAddr{Index: c.index, PK: c.e.PartitionKey, RK: c.e.RowKey}
			if _, ok := wantAt[a]; !ok {
				wantOrder = append(wantOrder, a)
			}
			wantAt[a] = c.e // the batch's last message wins, as handled in turn
			wants[i] = append(wants[i], a)
			g := group{a.Index, a.PK}
			behind[g] = append(behind[g], i)
		}
	}
	// Stale copies: those a message names that no current primary of the
	// batch calls for, each to be removed only while its owner is the
	// message's primary.
	staleOwners := map[copyAddr][]string{}
	var staleOrder []copyAddr
	for i := range bodies {
		if !live[i] {
			continue
		}
		b := bodies[i]
		for _, s := range b.Stale {
			if s.Index < 0 || s.Index >= len(x.defs) {
				continue
			}
			if _, wanted := wantAt[s]; wanted {
				continue // overwritten by its new owner's copy
			}
			if _, seen := staleOwners[s]; !seen {
				staleOrder = append(staleOrder, s)
			}
			staleOwners[s] = append(staleOwners[s], ownerRef(b.PK, b.RK))
			g := group{s.Index, s.PK}
			behind[g] = append(behind[g], i)
		}
	}
	// Read the stale copies (one query per 14 keys of an index partition)
	// to learn their owners and ETags.
	staleETag := map[copyAddr]azcore.ETag{}
	staleFailed := map[group]error{}
	byGroup := map[group][]string{}
	var groupOrder []group
	for _, s := range staleOrder {
		g := group{s.Index, s.PK}
		if byGroup[g] == nil {
			groupOrder = append(groupOrder, g)
		}
		byGroup[g] = append(byGroup[g], s.RK)
	}
	for _, g := range groupOrder {
		for chunk := range slices.Chunk(byGroup[g], maxRowKeysPerRead) {
			copies, err := readRows(ctx, x.copies[g.index], g.pk, chunk)
			if err != nil {
				staleFailed[g] = err
				break
			}
			for rk, c := range copies {
				a := copyAddr{Index: g.index, PK: g.pk, RK: rk}
				if of, _ := ownerOf(c); slices.Contains(staleOwners[a], of) {
					staleETag[a] = c.ETag
				}
			}
		}
	}
	// One set of operations per index partition: the copies written
	// whole, the stale ones deleted at the version read.
	ops := map[group][]batch.Op{}
	var opOrder []group
	add := func(g group, o batch.Op) {
		if ops[g] == nil {
			opOrder = append(opOrder, g)
		}
		ops[g] = append(ops[g], o)
	}
	for _, a := range wantOrder {
		add(group{a.Index, a.PK}, batch.Upsert(wantAt[a], aztables.UpdateModeReplace))
	}
	for _, s := range staleOrder {
		if etag, ok := staleETag[s]; ok {
			add(group{s.Index, s.PK}, batch.Delete(s.PK, s.RK).IfMatch(etag))
		}
	}
	failed := map[group]bool{}
	for g, err := range staleFailed {
		failed[g] = true
		for _, i := range behind[g] {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	for _, g := range opOrder {
		if failed[g] {
			continue
		}
		if err := submitOps(ctx, x.copies[g.index].Client(), ops[g]); err != nil {
			failed[g] = true
		}
	}
	// The messages behind a refused transaction, one by one.
	again := make([]bool, len(bodies))
	for g := range failed {
		if staleFailed[g] != nil {
			continue
		}
		for _, i := range behind[g] {
			again[i] = true
		}
	}
	for i, redo := range again {
		if redo {
			errs[i] = x.converge(ctx, bodies[i].PK, bodies[i].RK, bodies[i].Stale)
		}
	}
}

// submitOps sends ops as the fewest valid transactions.
func submitOps(ctx context.Context, client table.Client, ops []batch.Op) error {
	txs, err := batch.Plan(ops, nil)
	if err != nil {
		return err
	}
	for _, tx := range txs {
		if _, err := tx.Submit(ctx, client, nil); err != nil {
			return err
		}
	}
	return nil
}

// readRows reads the rows rks (at most maxRowKeysPerRead) of partition pk:
// one point read for one key, else one query.
func readRows[T any](ctx context.Context, tbl *table.Table[T], pk string, rks []string) (map[string]*T, error) {
	out := map[string]*T{}
	if len(rks) == 1 {
		v, err := tbl.Get(ctx, pk, rks[0], nil)
		switch {
		case table.Is(err, table.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			out[rks[0]] = v
		}
		return out, nil
	}
	eqs := make([]table.Filter, len(rks))
	for i, rk := range rks {
		eqs[i] = table.Prop("RowKey").Eq(rk)
	}
	for v, err := range tbl.Query(ctx, &table.QueryOptions{Filter: table.Prop("PartitionKey").Eq(pk).And(table.Or(eqs...))}) {
		if err != nil {
			return nil, err
		}
		out[tbl.Meta(v).RowKey] = v
	}
	return out, nil
}
