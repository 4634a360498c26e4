package patterns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tablekit/tablekit/internal/tableio"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/batch"
	"github.com/tablekit/tablekit/internal/idlist"
	"github.com/tablekit/tablekit/internal/keyrules"
	"github.com/tablekit/tablekit/internal/rowkind"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/table"
)

// chunkUnits is the most UTF-16 units one string property holds.
const chunkUnits = table.MaxStringUTF16

// maxChunks string properties of 64 KiB keep an index entity under the
// service's 1 MiB: 15 × (8 + 2·len("IDs14") + 4 + 65,536) + keys < 1 MiB.
const maxChunks = 15

// maxListUnits is how much ID list one index entity holds: the JSON array
// of IDs, in UTF-16 units, spread over 15 string properties of
// table.MaxStringUTF16 units each (491,520).
const maxListUnits = maxChunks * chunkUnits

// IndexEntitiesOptions configure IndexEntities. nil means the defaults.
type indexEntitiesOptions struct {
	// MaxListUnits caps the JSON ID list of one index entity, in UTF-16
	// units; a list that would outgrow it continues in another index
	// entity of the same value. Default (0) and maximum: what one entity
	// holds, 15 string properties of table.MaxStringUTF16 units (491,520);
	// a negative or larger value is refused by NewIndexEntities.
	MaxListUnits int
	// Retry bounds the read-and-transact rounds when writers race on one
	// index entity. Default: 64 attempts, 5 ms doubling to 500 ms.
	Retry *table.RetryOptions
	// LookupParallelism bounds the point queries of LookupEntities.
	// Default: 8.
	LookupParallelism int
}

// IndexEntities keeps, for each value of a property, the list of the IDs
// (RowKeys) of the entities that have it, in index entities in the same
// partition as those entities: the guide's "Index entities pattern", option
// 2 (the EmployeeIDs of every last name in a department). The entity and
// its index entity change in one transaction guarded by the index entity's
// ETag, so they never disagree; a writer that loses the race reads again
// and retries.
//
// An index entity's RowKey is the prefix, the tuple encoding of the value
// and a four-digit part number ("lname_Jones!0000"). When a value's list
// would outgrow one entity (1 MiB), it continues in a new part: all parts
// of a value sit in the same partition, so the transactions still cover
// them and a lookup is still one range query. (The alternative, the blob
// of option 1, gives up that consistency; it belongs with the
// cross-partition patterns.)
type indexEntities[T any] struct {
	tbl    *table.Table[T]
	raw    *table.Table[table.Entity] // the same table, for index entities
	client table.Client
	prefix string
	// primary is the RowKey prefix of the primaries when a Model holds
	// the index; "" alone, where every row no index wrote is a primary.
	primary string
	value   func(*T) string
	max     int
	retry   table.RetryOptions
	par     int
}

// newIndexEntities is NewIndexEntities, also used by the entity model.
func newIndexEntities[T any](tbl *table.Table[T], prefix string, value func(*T) string, opts *indexEntitiesOptions) (*indexEntities[T], error) {
	if tbl == nil {
		return nil, fmt.Errorf("%w: a list needs a table", ErrBadDefinition)
	}
	client := tbl.Client()
	if value == nil || prefix == "" {
		return nil, fmt.Errorf("%w: a list needs a Prefix and a Value func", ErrBadDefinition)
	}
	if err := keyrules.ValidateRowKey(prefix); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDefinition, err)
	}
	x := &indexEntities[T]{tbl: tbl, raw: tbl.Entities(), client: client, prefix: prefix, value: value, max: maxListUnits,
		retry: listRetry(), par: 8}
	if opts != nil {
		if opts.MaxListUnits < 0 || opts.MaxListUnits > maxListUnits {
			return nil, fmt.Errorf("%w: %w", ErrBadDefinition, &table.InputError{Op: "OpenModel", Field: "MaxListUnits", Rule: table.ErrBadOption, Detail: fmt.Sprintf("%d is outside 0 (the default) to %d, what one entity holds", opts.MaxListUnits, maxListUnits)})
		}
		if opts.MaxListUnits > 0 && opts.MaxListUnits < maxListUnits {
			x.max = opts.MaxListUnits
		}
		if opts.Retry != nil {
			x.retry = *opts.Retry
		}
		if opts.LookupParallelism > 0 {
			x.par = opts.LookupParallelism
		}
	}
	return x, nil
}

// listRetry is the default retry of a list change that lost a race on the
// list's ETag (index entities and index blobs alike): many writers may add
// to one popular value's list at once, so it tries long, with back-off.
func listRetry() table.RetryOptions {
	return table.RetryOptions{MaxAttempts: 64, BaseDelay: 5 * time.Millisecond, MaxDelay: 500 * time.Millisecond}
}

// indexPart is one index entity as read.
type indexPart struct {
	rowKey string
	etag   azcore.ETag
	ids    []string
}

func (x *indexEntities[T]) valuePrefix(value string) (string, error) {
	enc, err := keys.EncodeTuple(value)
	if err != nil {
		return "", err
	}
	return x.prefix + enc, nil
}

func (x *indexEntities[T]) partKey(value string, n int) (string, error) {
	p, err := x.valuePrefix(value)
	if err != nil {
		return "", err
	}
	num, err := keys.FixedUint(uint64(n), 4)
	if err != nil {
		return "", fmt.Errorf("patterns: value %q needs more than 10,000 index entities", value)
	}
	k := p + num
	if err := keyrules.ValidateRowKey(k); err != nil {
		return "", err
	}
	return k, nil
}

// read returns every index entity of value, in part order: one request.
// op names the operation in errors.
func (x *indexEntities[T]) read(ctx context.Context, op, pk, value string) ([]indexPart, error) {
	p, err := x.valuePrefix(value)
	if err != nil {
		return nil, &table.InputError{Op: op, Field: "value", Rule: err}
	}
	var parts []indexPart
	for e, err := range x.raw.Query(ctx, &table.QueryOptions{Filter: table.RowPrefix(pk, p)}) {
		if err != nil {
			return nil, err
		}
		part, err := decodePart(e)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part)
	}
	return parts, nil
}

// idsProperty is the name of the i-th string property of an ID list.
func idsProperty(i int) string { return fmt.Sprintf("IDs%02d", i) }

func decodePart(e *table.Entity) (indexPart, error) {
	part := indexPart{rowKey: e.RowKey, etag: e.ETag}
	var list strings.Builder
	for i := 0; i < maxChunks; i++ {
		v, ok := e.Get(idsProperty(i))
		if !ok {
			break
		}
		s, ok := v.AsString()
		if !ok {
			return indexPart{}, fmt.Errorf("patterns: index entity %q: %s is not a string", e.RowKey, idsProperty(i))
		}
		list.WriteString(s)
	}
	ids, err := idlist.Decode(list.String())
	if err != nil {
		return indexPart{}, fmt.Errorf("patterns: index entity %q: %w", e.RowKey, err)
	}
	part.ids = ids
	return part, nil
}

// errPartFull says that a list does not fit the units an index entity
// allows it; the caller starts another part.
var errPartFull = errors.New("patterns: the ID list outgrows its index entity")

// encodePart is an index entity holding ids, or errPartFull when their
// list takes more than limit UTF-16 units. The IDs are RowKeys, which the
// keys' validation keeps valid UTF-8, or IDs RemoteIndexEntities.Add
// checked; an invalid one is still refused rather than stored as another.
func (x *indexEntities[T]) encodePart(pk, rk, value string, ids []string, limit int) (*table.Entity, error) {
	list, err := idlist.Encode(ids)
	if err != nil {
		return nil, err
	}
	if keyrules.UTF16Len(list) > limit {
		return nil, errPartFull
	}
	e := &table.Entity{Meta: table.Meta{PartitionKey: pk, RowKey: rk}}
	e.Set(rowkind.Property, table.ValueOf(string(rowkind.List)))
	e.Set("Value", table.ValueOf(value))
	for i, chunk := range idlist.Chunks(list, chunkUnits) {
		e.Set(idsProperty(i), table.ValueOf(chunk))
	}
	return e, nil
}

// addTo returns the operation that puts id into value's list.
func (x *indexEntities[T]) addTo(pk, value, id string, parts []indexPart) (batch.Op, error) {
	if len(parts) > 0 {
		last := parts[len(parts)-1]
		e, err := x.encodePart(pk, last.rowKey, value, append(slices.Clone(last.ids), id), x.max)
		if err == nil {
			e.ETag = last.etag
			return batch.Update(e, aztables.UpdateModeReplace), nil
		}
		if !errors.Is(err, errPartFull) {
			return batch.Op{}, err
		}
	}
	n := 0
	if len(parts) > 0 {
		var err error
		if n, err = partNumber(parts[len(parts)-1].rowKey); err != nil {
			return batch.Op{}, err
		}
		n++
	}
	rk, err := x.partKey(value, n)
	if err != nil {
		return batch.Op{}, err
	}
	e, err := x.encodePart(pk, rk, value, []string{id}, x.max)
	if errors.Is(err, errPartFull) {
		return batch.Op{}, fmt.Errorf("patterns: the ID %q alone outgrows an index entity", id)
	}
	if err != nil {
		return batch.Op{}, err
	}
	return batch.Add(e), nil
}

func partNumber(rk string) (int, error) {
	if len(rk) < 4 {
		return 0, fmt.Errorf("patterns: %q is not an index entity", rk)
	}
	n, err := keys.ParseFixedUint(rk[len(rk)-4:], 4)
	return int(n), err
}

// removeFrom returns the operation that takes id out of value's list, or
// nil when no part holds it. A part left empty is deleted.
func (x *indexEntities[T]) removeFrom(pk, value, id string, parts []indexPart) (*batch.Op, error) {
	for _, p := range parts {
		i := slices.Index(p.ids, id)
		if i < 0 {
			continue
		}
		rest := slices.Delete(slices.Clone(p.ids), i, i+1)
		if len(rest) == 0 {
			op := batch.Delete(pk, p.rowKey).IfMatch(p.etag)
			return &op, nil
		}
		// The part shrinks, so it is written even if it holds more than
		// this index's MaxListUnits (another writer's setting); only what
		// one entity holds at all bounds it.
		e, err := x.encodePart(pk, p.rowKey, value, rest, maxListUnits)
		if err != nil {
			return nil, err
		}
		e.ETag = p.etag
		op := batch.Update(e, aztables.UpdateModeReplace)
		return &op, nil
	}
	return nil, nil
}

func containsID(parts []indexPart, id string) bool {
	for _, p := range parts {
		if slices.Contains(p.ids, id) {
			return true
		}
	}
	return false
}

func (x *indexEntities[T]) lookup(ctx context.Context, op, partitionKey, value string) ([]string, error) {
	if err := keyrules.ValidatePartitionKey(partitionKey); err != nil {
		return nil, &table.InputError{Op: op, Field: "PartitionKey", Rule: err}
	}
	parts, err := x.read(ctx, op, partitionKey, value)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, p := range parts {
		ids = append(ids, p.ids...)
	}
	return ids, nil
}

// LookupEntities returns the entities with value: Lookup, then one point
// query per ID, LookupParallelism at a time, in the order of the list.
// IDs whose entity has gone are skipped.
func (x *indexEntities[T]) LookupEntities(ctx context.Context, partitionKey, value string, options *ReadOptions) ([]*T, error) {
	ids, err := x.lookup(ctx, opModelLookupEntities, partitionKey, value)
	if err != nil {
		return nil, err
	}
	out := make([]*T, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, x.par)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			v, err := x.tbl.Get(ctx, partitionKey, id, nil)
			if err != nil && !table.Is(err, table.ErrNotFound) {
				errs[i] = err
			}
			out[i] = v
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(out, func(v *T) bool { return v == nil }), nil
}

// listState is one value's list as verify read it and as its entities
// call for it, kept for repair.
type listState struct {
	pk    string
	value string
	parts []indexPart // as stored, in part order
	want  []string    // the IDs of the entities with the value, in key order
}

// verify reads opts.Partition (the whole table when it is "", one request
// per page either way) and compares every value's ID list with the
// entities that have the value, one partition at a time (memory is
// bounded by one partition's rows): an entity missing from its value's
// list is Missing, an ID whose entity is gone or has another value is an
// Orphan, an ID listed twice is Stale. Rows whose RowKey starts with the
// prefix are this index's entities; the primaries are the rows under the
// primary prefix (within a Model) or every row that no index of this
// package wrote (copies and other lists are left alone).
func (x *indexEntities[T]) verify(ctx context.Context, opts *VerifyOptions, each func(*verifyRange) error) error {
	return scanPartitions(ctx, x.raw, opts, func(pk string, rows []*table.Entity) error {
		r := newRange(x, "list("+x.prefix+")", opts)
		r.lists = map[[2]string]*listState{}
		if err := x.verifyPartition(ctx, pk, rows, r); err != nil {
			return err
		}
		return each(r)
	})
}

// verifyPartition adds to r what the rows of one partition show.
func (x *indexEntities[T]) verifyPartition(ctx context.Context, partitionKey string, rows []*table.Entity, r *verifyRange) error {
	lists := map[string]*listState{}
	list := func(value string) *listState {
		l := lists[value]
		if l == nil {
			l = &listState{pk: partitionKey, value: value}
			lists[value] = l
		}
		return l
	}
	for _, e := range rows {
		if strings.HasPrefix(e.RowKey, x.prefix) {
			part, err := decodePart(e)
			if err != nil {
				return err
			}
			value, _ := e.Get("Value")
			s, _ := value.AsString()
			l := list(s)
			l.parts = append(l.parts, part)
			r.Copies += len(part.ids)
			continue
		}
		if isMarkedRow(e) || !strings.HasPrefix(e.RowKey, x.primary) {
			continue // another index's row, or a row of another kind
		}
		v, err := tableio.For(x.tbl).FromStored(ctx, e)
		if err != nil {
			return err
		}
		r.Primaries++
		if value := x.value(v); value != "" {
			l := list(value)
			l.want = append(l.want, e.RowKey)
		}
	}
	for _, value := range slices.Sorted(maps.Keys(lists)) {
		l := lists[value]
		issues := len(r.Missing) + len(r.Orphans) + len(r.Stale)
		want := map[string]bool{}
		for _, id := range l.want {
			want[id] = true
		}
		listed := map[string]bool{}
		for _, p := range l.parts {
			for _, id := range p.ids {
				issue := IndexIssue{Index: r.Index, PartitionKey: partitionKey, PrimaryPartitionKey: partitionKey, Primary: id, Copy: p.rowKey, CopyETag: p.etag}
				switch {
				case listed[id]:
					issue.Kind = IssueStale
					r.Stale = append(r.Stale, issue)
				case !want[id]:
					issue.Kind = IssueOrphan
					r.Orphans = append(r.Orphans, issue)
				}
				listed[id] = true
			}
		}
		for _, id := range l.want {
			if !listed[id] {
				first := ""
				if len(l.parts) > 0 {
					first = l.parts[0].rowKey
				}
				r.Missing = append(r.Missing, IndexIssue{Kind: IssueMissing, Index: r.Index, PartitionKey: partitionKey, PrimaryPartitionKey: partitionKey, Primary: id, Copy: first})
			}
		}
		if len(r.Missing)+len(r.Orphans)+len(r.Stale) > issues {
			r.lists[[2]string{partitionKey, value}] = l // repair rewrites only the lists found wrong
		}
	}
	return nil
}

// repair rewrites every list of the partition that verify found wrong to
// hold exactly the IDs of the entities with its value, in key order: each
// value's index entities are rewritten together, each guarded by the ETag
// verify read, so a list that changed since (an Add, Remove or Change)
// makes that value's repair fail instead of losing the change: run Repair
// again. The values of a partition share transactions (see RepairOptions).
func (x *indexEntities[T]) repair(ctx context.Context, r *verifyRange, opts *RepairOptions) (_ RepairSummary, err error) {
	var groups []repairGroup
	values := slices.SortedFunc(maps.Keys(r.lists), func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	for _, value := range values {
		g, err := x.relist(r.lists[value])
		if err != nil {
			return RepairSummary{}, err
		}
		groups = append(groups, g)
	}
	return repairPacked(ctx, x.client, groups, opts)
}

// relist is the operations that make one value's index entities hold
// exactly l.want: the parts renumbered from 0, each filled as far as it
// holds, the old ones updated or deleted under their ETags.
func (x *indexEntities[T]) relist(l *listState) (repairGroup, error) {
	var g repairGroup
	pk := l.pk
	// Chunk the list greedily into parts that fit.
	var chunks [][]string
	var cur []string
	for _, id := range l.want {
		_, err := x.encodePart(pk, "", l.value, append(cur, id), x.max)
		if err != nil && !errors.Is(err, errPartFull) {
			return g, err
		}
		if err == nil || len(cur) == 0 {
			cur = append(cur, id)
			continue
		}
		chunks, cur = append(chunks, cur), []string{id}
	}
	if len(cur) > 0 {
		chunks = append(chunks, cur)
	}
	old := map[string]indexPart{}
	for _, p := range l.parts {
		old[p.rowKey] = p
	}
	for i, ids := range chunks {
		rk, err := x.partKey(l.value, i)
		if err != nil {
			return g, err
		}
		e, err := x.encodePart(pk, rk, l.value, ids, x.max)
		if errors.Is(err, errPartFull) {
			return g, fmt.Errorf("patterns: the ID %q alone outgrows an index entity", ids[0])
		}
		if err != nil {
			return g, err
		}
		if p, had := old[rk]; had {
			e.ETag = p.etag
			g.ops = append(g.ops, batch.Update(e, aztables.UpdateModeReplace))
			delete(old, rk)
		} else {
			g.ops = append(g.ops, batch.Add(e))
		}
		g.written++
	}
	for _, p := range l.parts {
		if _, left := old[p.rowKey]; left {
			g.ops = append(g.ops, batch.Delete(pk, p.rowKey).IfMatch(p.etag))
			g.deleted++
		}
	}
	return g, nil
}

// appendIDs returns the operations that add ids to value's list, as they
// stand after parts: the last part filled as far as it holds, then new
// parts; each part changed once (its last state), guarded by the ETag it
// was read at. IDs already listed are left.
func (x *indexEntities[T]) appendIDs(pk, value string, ids []string, parts []indexPart) ([]batch.Op, error) {
	type state struct {
		indexPart
		existed, changed bool
	}
	var ps []*state
	for _, p := range parts {
		ps = append(ps, &state{indexPart: indexPart{rowKey: p.rowKey, ids: slices.Clone(p.ids), etag: p.etag}, existed: true})
	}
	for _, id := range ids {
		if containsID(parts, id) {
			continue
		}
		if n := len(ps); n > 0 {
			last := ps[n-1]
			_, err := x.encodePart(pk, last.rowKey, value, append(slices.Clone(last.ids), id), x.max)
			if err == nil {
				last.ids, last.changed = append(last.ids, id), true
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
		ps = append(ps, &state{indexPart: indexPart{rowKey: rk, ids: []string{id}}, changed: true})
	}
	var ops []batch.Op
	for _, p := range ps {
		if !p.changed {
			continue
		}
		e, err := x.encodePart(pk, p.rowKey, value, p.ids, x.max)
		if errors.Is(err, errPartFull) {
			return nil, fmt.Errorf("patterns: the ID %q alone outgrows an index entity", p.ids[0])
		}
		if err != nil {
			return nil, err
		}
		if p.existed {
			e.ETag = p.etag
			ops = append(ops, batch.Update(e, aztables.UpdateModeReplace))
		} else {
			ops = append(ops, batch.Add(e))
		}
	}
	return ops, nil
}
